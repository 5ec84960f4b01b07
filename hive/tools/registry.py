"""The toolbox: the only way a bee reaches a tool, and only the tools its role lists.

There is no write or edit tool anywhere in hive; :data:`ALL_TOOLS` is the whole set. A call to a tool that is
not in the role's list, or that does not exist, is refused here with an error result, whatever the model's
prompt or arguments say. :meth:`Toolbox.call` never raises for anything the model sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hive.errors import UsageError
from hive.providers.base import ToolSpec, valid_text
from hive.tools.base import Tool, ToolResult
from hive.tools.bash import BashTool
from hive.tools.browse import BrowseTool
from hive.tools.common import OUTPUT_CAP, preview
from hive.tools.fs import FindTool, GrepTool, LsTool, ReadTool, RepoRoot

ALL_TOOLS: tuple[str, ...] = ("read", "grep", "find", "ls", "bash", "browse")


def unknown_tools(names: Sequence[str]) -> list[str]:
    """The names in ``names`` that are not hive tools."""
    return [name for name in names if name not in ALL_TOOLS]


class Toolbox:
    """The tools of one bee: built from its role's list, confined to ``repo``.

    ``env`` adds variables to bash's clean environment (secret-looking and loader variables are dropped even
    there). ``bwrap_path`` and ``rg_path`` name the sandbox and search programs; ``rg_path=None`` forces the
    pure-Python grep and find. ``exclude`` names directories that are no part of the investigation (hive's
    runs directory): the file tools treat those inside ``repo`` as absent, and ``bash`` sees every one of them
    empty, wherever it is.
    """

    def __init__(
        self,
        repo: Path,
        allowed: Sequence[str],
        *,
        unsafe_bash: bool = False,
        bash_timeout: float = 60.0,
        env: Mapping[str, str] | None = None,
        bwrap_path: str = "bwrap",
        rg_path: str | None = "rg",
        output_cap: int = OUTPUT_CAP,
        exclude: Sequence[Path] = (),
    ) -> None:
        if not repo.is_dir():
            raise UsageError(f"repository {repo} is not a directory")
        unknown = unknown_tools(allowed)
        if unknown:
            raise UsageError(f"unknown tool {', '.join(unknown)}; hive's tools are: {', '.join(ALL_TOOLS)}")
        self.allowed: tuple[str, ...] = tuple(dict.fromkeys(allowed))
        root = RepoRoot(repo, exclude)
        self._bash = BashTool(
            root.path,
            timeout=bash_timeout,
            cap=output_cap,
            unsafe=unsafe_bash,
            bwrap_path=bwrap_path,
            env=env,
            exclude=exclude,
        )
        self._browse = BrowseTool(cap=output_cap)
        tools: dict[str, Tool] = {
            "read": ReadTool(root, cap=output_cap),
            "grep": GrepTool(root, rg_path=rg_path, cap=output_cap),
            "find": FindTool(root, rg_path=rg_path, cap=output_cap),
            "ls": LsTool(root, cap=output_cap),
            "bash": self._bash,
            "browse": self._browse,
        }
        self._tools = {name: tools[name] for name in self.allowed}
        self._closed = False

    def specs(self) -> list[ToolSpec]:
        """The specs of the allowed tools, in role order, for the model's tool list."""
        return [tool.spec for tool in self._tools.values()]

    async def call(self, name: str, args: dict[str, Any]) -> ToolResult:
        """Run one tool call. Refusals and failures come back as ``ok=False`` results, never as exceptions."""
        if self._closed:
            return ToolResult(
                text="tools are closed: no more tool calls; write your final report now.",
                ok=False,
                activity=f"{preview(str(name))}: refused (tools closed)",
            )
        tool = self._tools.get(name)
        if tool is None:
            allowed = ", ".join(self.allowed) or "none"
            if name in ALL_TOOLS:
                reason = f"tool {name!r} is not allowed for this role; allowed tools: {allowed}"
            else:
                reason = f"unknown tool {preview(str(name))!r}; allowed tools: {allowed}"
            return ToolResult(
                text=f"refused: {reason}. There is no write or edit tool.",
                ok=False,
                activity=f"{preview(str(name))}: refused (not in this role's tools)",
            )
        try:
            result = await tool.run(args)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # a bug in a tool must not crash the bee; the model sees what went wrong
            result = ToolResult(text=f"{name} failed: {type(e).__name__}: {e}", ok=False, activity=f"{name}: failed")
        # A file name that is not UTF-8 (reached through a symlink, say) is a str with lone surrogates in Python;
        # no record could hold it.
        return ToolResult(text=valid_text(result.text), ok=result.ok, activity=valid_text(result.activity))

    async def aclose(self) -> None:
        """Refuse further calls, kill running commands, close the HTTP client."""
        self._closed = True
        await self._bash.aclose()
        await self._browse.aclose()
