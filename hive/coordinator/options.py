"""What ``hive start`` was asked to do, validated before anything is started or written."""

from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from hive.errors import UsageError
from hive.records import GateMode

MIN_BEES, MAX_BEES = 2, 6
MAX_PROBLEM_CHARS = 20_000


@dataclass(frozen=True)
class StartOptions:
    problem: str
    repo: Path
    model: str
    bees: int
    angles: tuple[str, ...] = ()
    judge: tuple[str, ...] = ("local",)
    gate_modes: dict[str, GateMode] = field(default_factory=dict)
    role: str = "investigator"
    time_limit: float = 600.0
    deadline: float | None = None
    dispute_timeout: float = 60.0
    max_verifiers: int = 2
    runs_dir: Path = Path("runs")
    unsafe_bash: bool = False
    delivery_cap: int = 10
    grace: float = 90.0
    stall_timeout: float = 300.0
    max_steps: int | None = None
    race: bool = False
    """Stop the whole hive once the ``answer`` gate is near-certain a note answers the problem."""


def check_text(what: str, text: str) -> str:
    """Refuse text that cannot be written as UTF-8: bytes that were not UTF-8 on the command line arrive as
    lone surrogates, which no record file can hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{what} is not valid UTF-8 text") from None
    return text


def check_problem(problem: str) -> str:
    text = check_text("the problem", problem).strip()
    if not text:
        raise UsageError("the problem is empty: say what the bees should investigate")
    if len(text) > MAX_PROBLEM_CHARS:
        raise UsageError(f"the problem is {len(text):,} characters; keep it under {MAX_PROBLEM_CHARS:,}")
    return text


def check_bee_count(bees: int | None, angles: tuple[str, ...]) -> int:
    if bees is None:
        bees = len(angles) if angles else 3
    if not MIN_BEES <= bees <= MAX_BEES:
        raise UsageError(f"--bees must be between {MIN_BEES} and {MAX_BEES}, not {bees}")
    if angles and len(angles) != bees:
        raise UsageError(f"--bees {bees} does not match the {len(angles)} --angle options given")
    if any(not a.strip() for a in angles):
        raise UsageError("an --angle is empty")
    for angle in angles:
        check_text("an --angle", angle)
    return bees


def check_repo(repo: Path) -> Path:
    check_text("the repository path", str(repo.absolute()))
    try:
        # exists() answers False only for "no such file": a parent that cannot be searched raises.
        if not repo.exists():
            raise UsageError(f"repository {str(repo)!r} does not exist")
        if not repo.is_dir():
            raise UsageError(f"repository {str(repo)!r} is not a directory")
    except OSError as e:
        raise UsageError(f"repository {str(repo)!r} cannot be reached ({e.strerror})") from e
    if not os.access(repo, os.R_OK | os.X_OK):
        raise UsageError(f"repository {str(repo)!r} is not readable")
    return repo.resolve()


def check_runs_dir(runs_dir: Path) -> Path:
    """The runs directory must be creatable and writable; nothing is created here."""
    check_text("the runs directory path", str(runs_dir.absolute()))
    probe = runs_dir
    try:
        # exists() answers False only for "no such file": a parent that cannot be searched raises.
        while not probe.exists():
            if probe.parent == probe:
                break
            probe = probe.parent
        if probe.exists() and not probe.is_dir():
            raise UsageError(f"runs directory {str(runs_dir)!r} is not a directory")
    except OSError as e:
        raise UsageError(f"runs directory {str(runs_dir)!r} cannot be reached ({e.strerror})") from e
    # os.access() says yes to root everywhere; only a real (immediately removed) file tells the truth. It gets
    # a byte, since a full disk still makes empty files.
    try:
        fd, name = tempfile.mkstemp(prefix=".hive-probe-", dir=probe)
        try:
            os.write(fd, b"\n")
        finally:
            os.close(fd)
            os.unlink(name)
    except OSError as e:
        raise UsageError(f"runs directory {str(runs_dir)!r} is not writable ({e.strerror})") from e
    return runs_dir


def check_positive(name: str, value: float | None) -> None:
    """A number of seconds or steps must be a finite number above zero (``nan`` and ``inf`` parse as floats)."""
    if value is not None and not (0 < value < math.inf):
        raise UsageError(f"{name} must be a positive number, not {value}")
