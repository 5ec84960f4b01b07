"""The bee's transcript: everything it sent to its model and got back, with no secret in it.

Secrets are scrubbed defensively (:mod:`hive.secrets`): the value of every environment variable whose name
looks like a secret (``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD`` …) is replaced wherever it appears
in text, arguments or data, because a tool may have read it from a file the bee was allowed to see. The
variables themselves are never written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hive.providers.base import TokenUsage
from hive.records import TranscriptEntry
from hive.secrets import Scrubber
from hive.store import JsonlWriter

RESULT_LIMIT = 20_000
"""Characters of a tool result kept in the transcript. The model got the whole (already capped) text, unless it
was later elided or cut to fit the model's context (an ``elided`` event says so; see :mod:`hive.bee.context`)."""


def truncate(text: str, limit: int = RESULT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [transcript truncated: {len(text) - limit} more characters]"


def spent(entries: Iterable[TranscriptEntry]) -> TokenUsage | None:
    """What a bee's model calls spent, from the ``usage`` line its transcript has for each call; ``None`` when
    it has none. A figure that is not a finite, non-negative number counts as none (a cost as unknown); a line
    with only a ``tokens`` total counts it as input."""
    total: TokenUsage | None = None
    for entry in entries:
        if entry.event != "usage" or not entry.data:
            continue
        data = entry.data
        tokens = _count(data.get("tokens"))
        used = TokenUsage(_count(data.get("input_tokens")) or 0, _count(data.get("output_tokens")) or 0,
                          _amount(data.get("cost_usd")))
        if tokens is not None and used.total == 0:
            used = TokenUsage(tokens, 0, used.cost_usd)
        total = used if total is None else total + used
    return total


def _amount(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        return None
    return float(value)


def _count(value: object) -> int | None:
    amount = _amount(value)
    return None if amount is None else int(amount)


class Transcript:
    """Appends :class:`TranscriptEntry` lines to ``path``, scrubbed of secrets."""

    def __init__(self, path: Path, scrubber: Scrubber) -> None:
        self._writer = JsonlWriter(path)
        self._scrub = scrubber

    def write(
        self,
        event: str,
        *,
        role: str | None = None,
        content: str | None = None,
        tool: str | None = None,
        args: Mapping[str, Any] | None = None,
        call_id: str | None = None,
        data: Mapping[str, Any] | None = None,
    ) -> None:
        self._writer.append(
            TranscriptEntry.model_validate(
                {
                    "event": event,
                    "role": role,
                    "content": None if content is None else self._scrub.text(content),
                    "tool": tool,
                    "args": None if args is None else self._scrub.data(args),
                    "call_id": call_id,
                    "data": None if data is None else self._scrub.data(data),
                }
            )
        )

    def close(self) -> None:
        self._writer.close()
