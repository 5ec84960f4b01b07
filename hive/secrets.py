"""Secrets: which environment variables hold credentials, and scrubbing their values out of what hive writes.

Keys live in the environment of the processes that need them (a bee's provider, the coordinator's planner
and answer calls). Their values are replaced by ``[redacted]`` wherever they would reach a file of a run or
the terminal, because a model may repeat a key it read from a file, and a person may paste one into a
problem. The bash sandbox never receives them at all (:func:`is_secret_name`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)$|API_?KEY|ACCESS_KEY|PRIVATE_KEY",
    re.IGNORECASE,
)
MIN_SECRET_LENGTH = 6
"""Shorter values (``1``, ``true``) would redact ordinary words; a real key is never that short."""


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential (``OPENAI_API_KEY``, ``FOO_TOKEN``)."""
    return _SECRET_NAME.search(name) is not None


def secret_values(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """Values of the secret-looking variables in ``env`` (default: the process environment), longest first."""
    env = os.environ if env is None else env
    values = {v for k, v in env.items() if is_secret_name(k) and len(v) >= MIN_SECRET_LENGTH}
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
