"""The tool protocol. A bee reaches a tool only through its role's list (see :mod:`hive.tools.registry`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from hive.providers.base import ToolSpec


@dataclass(frozen=True)
class ToolResult:
    text: str
    """What the model sees."""
    ok: bool = True
    activity: str = ""
    """One plain line for people, written by rule: "read hive/board.py", "ran `pytest -x`: exit 1"."""


class Tool(Protocol):
    spec: ToolSpec

    async def run(self, args: dict[str, Any]) -> ToolResult: ...
