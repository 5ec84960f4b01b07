"""The bee's transcript: everything it sent to its model and got back, with no secret in it.

Secrets are scrubbed defensively: the value of every environment variable whose name looks like a secret
(``*_KEY``, ``*_TOKEN``, ``*_SECRET``, ``*_PASSWORD``) is replaced wherever it appears in text, arguments
or data, because a tool may have read it from a file the bee was allowed to see. The variables themselves
are never written.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from hive.records import TranscriptEntry
from hive.store import JsonlWriter

REDACTED = "[redacted]"
SECRET_NAME = re.compile(r"(_KEY|_TOKEN|_SECRET|_PASSWORD)$|^(API_KEY|TOKEN|SECRET|PASSWORD)$", re.IGNORECASE)
MIN_SECRET_LENGTH = 6
"""Shorter values (``1``, ``true``) would redact ordinary words; a real key is never that short."""

RESULT_LIMIT = 20_000
"""Characters of a tool result kept in the transcript; the model saw the whole (already capped) text."""


def secret_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of the secret-looking variables in ``env`` (default: the process environment), longest first."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if SECRET_NAME.search(k) and len(v) >= MIN_SECRET_LENGTH}
    return tuple(sorted(values, key=len, reverse=True))


class Scrubber:
    """Replaces known secret values in strings and in nested JSON-like data."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = tuple(s for s in secrets if s)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def data(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.data(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.data(v) for v in value]
        return value


def truncate(text: str, limit: int = RESULT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}\n… [transcript truncated: {len(text) - limit} more characters]"


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
