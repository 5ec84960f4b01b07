"""One exception tree for hive. Exit codes are mapped only in the CLI.

    HiveError
    ├── UsageError            bad flags, bad config, bad input files (exit 2)
    │   ├── RunNotFound       a RUN reference that names no run, or more than one
    │   └── SpecError         an unknown or malformed model / judge / role spec
    ├── RunFailed             a run could not complete (exit 1)
    │   └── ModelAPIError     a provider answered with an error we could not retry past
    ├── StoreError            a record file could not be written or read (exit 1)
    └── Interrupted           the user stopped the run (exit 130)

Exceptions carry data; callers decide what to log or print.
"""

from __future__ import annotations


class HiveError(Exception):
    """Root of every error hive raises on purpose."""

    exit_code: int = 1


class UsageError(HiveError):
    """The user's input is wrong: a flag, a file, a spec. Fix the input and retry."""

    exit_code = 2


class RunNotFound(UsageError):
    """A RUN reference matched no run, or matched several."""


class SpecError(UsageError):
    """A model, judge tier, gate mode or role specification is malformed or unknown."""


class RunFailed(HiveError):
    """The run could not complete."""

    exit_code = 1


class ModelAPIError(RunFailed):
    """A model provider answered with an error that retries did not get past."""

    def __init__(self, message: str, *, status: int | None = None, body: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class StoreError(HiveError):
    """A record file could not be written (disk full, permissions) or read (not a file, I/O error)."""

    exit_code = 1


class Interrupted(HiveError):
    """The user interrupted the run."""

    exit_code = 130
