"""Run directories: where they live, how a RUN reference finds one, and what state each is in."""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from hive.errors import RunNotFound, UsageError

if TYPE_CHECKING:
    from hive.records import RunInfo, RunStatus

DEFAULT_RUNS_DIR = "runs"


def runs_dir_from(option: str | Path | None) -> Path:
    """``--runs-dir``, else ``HIVE_RUNS_DIR``, else ``./runs``."""
    if option:
        return Path(option)
    return Path(os.environ.get("HIVE_RUNS_DIR") or DEFAULT_RUNS_DIR)


def new_run_id() -> str:
    """Sortable by start time, unique by a random suffix: ``20261130-030405-a1b2``."""
    return datetime.now(UTC).strftime("%Y%m%d-%H%M%S-") + secrets.token_hex(2)


@dataclass(frozen=True)
class RunPaths:
    """The files of one run directory."""

    dir: Path

    @property
    def id(self) -> str:
        return self.dir.name

    @property
    def run_json(self) -> Path:
        return self.dir / "run.json"

    @property
    def board(self) -> Path:
        return self.dir / "board.jsonl"

    @property
    def gate(self) -> Path:
        return self.dir / "gate.jsonl"

    @property
    def answer(self) -> Path:
        return self.dir / "answer.md"

    def bee_dir(self, bee: str) -> Path:
        return self.dir / "bees" / bee

    def transcript(self, bee: str) -> Path:
        return self.bee_dir(bee) / "transcript.jsonl"

    def brief(self, bee: str) -> Path:
        return self.bee_dir(bee) / "brief.json"


def load_run_info(paths: RunPaths) -> RunInfo:
    from pydantic import ValidationError

    from hive.records import RunInfo
    try:
        return RunInfo.model_validate(orjson.loads(paths.run_json.read_bytes()))
    except FileNotFoundError as e:
        raise RunNotFound(f"{paths.dir} is not a run directory (no run.json)") from e
    except PermissionError as e:
        raise UsageError(f"cannot read {paths.run_json}: permission denied") from e
    except OSError as e:
        raise UsageError(f"cannot read {paths.run_json}: {e.strerror}") from e
    except (orjson.JSONDecodeError, ValidationError) as e:
        raise UsageError(f"{paths.run_json} is not a valid run.json") from e


def _pid_alive(pid: int) -> bool:
    if pid <= 0:  # kill(0 or negative) signals a whole process group, not one process
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """A killed coordinator whose parent has not reaped it yet still answers ``kill(pid, 0)``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:  # no procfs (macOS), or the process just went
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def effective_status(info: RunInfo) -> RunStatus:
    """The run's status, reading a "running" run whose coordinator is gone as interrupted."""
    if info.status != "running":
        return info.status
    if info.pid is not None and info.host in (None, socket.gethostname()) and not _pid_alive(info.pid):
        return "interrupted"
    return "running"


def duration_seconds(info: RunInfo, *, last_seen: datetime | None = None) -> float | None:
    """From the start to the end: ``ended_at``; now, while the run runs; for a run that stopped without saying
    when (its coordinator died), ``last_seen``, its last sign of life (:func:`last_sign_of_life`). ``None``
    when the end (or the start) is unknown."""
    from hive.records import parse_iso
    try:
        start = parse_iso(info.started_at)
        if info.ended_at:
            end = parse_iso(info.ended_at)
        elif effective_status(info) == "running":
            end = datetime.now(UTC)
        elif last_seen is not None:
            end = last_seen
        else:
            return None
    except ValueError:
        return None
    return max(0.0, (end - start).total_seconds())


def last_sign_of_life(paths: RunPaths) -> datetime | None:
    """When the run last wrote anything: the latest change to its run.json, board, gate log or a transcript."""
    files = [paths.run_json, paths.board, paths.gate]
    with contextlib.suppress(OSError):  # no bees yet, or unreadable: the run's own files still tell
        files += [bee / "transcript.jsonl" for bee in (paths.dir / "bees").iterdir()]
    times = []
    for file in files:
        try:
            times.append(file.stat().st_mtime)
        except OSError:
            continue
    return datetime.fromtimestamp(max(times), UTC) if times else None


def holds_run_json(directory: Path) -> bool | None:
    """Whether ``directory`` holds a ``run.json``; ``None`` when that cannot be told (a directory that cannot
    be searched, an I/O error), so that callers can name the directory instead of crashing on it."""
    try:
        return (directory / "run.json").exists()
    except OSError:  # exists() answers False only for "no such file"; EACCES and the like are raised
        return None


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def list_run_dirs(runs_dir: Path) -> list[RunPaths]:
    """Run directories under ``runs_dir``, oldest first. A directory that cannot be searched is listed too:
    it may be a run, and reading it will say why it cannot be shown."""
    try:
        # exists() answers False only for "no such file": a parent that cannot be searched raises.
        if not runs_dir.exists():
            return []
        if not runs_dir.is_dir():
            raise UsageError(f"runs directory {str(runs_dir)!r} is not a directory")
        entries = sorted(runs_dir.iterdir(), key=lambda p: p.name)
    except PermissionError as e:
        raise UsageError(f"cannot read runs directory {str(runs_dir)!r}: permission denied") from e
    except OSError as e:
        raise UsageError(f"cannot read runs directory {str(runs_dir)!r}: {e.strerror}") from e
    return [RunPaths(p) for p in entries if _is_run_candidate(p)]


def _is_run_candidate(path: Path) -> bool:
    held = holds_run_json(path)
    return held is True or (held is None and _is_dir(path))


def resolve_run(runs_dir: Path, ref: str | None) -> RunPaths:
    """Find a run by id, unique id prefix, path, or ``latest`` (the default).

    ``latest`` and a prefix skip runs whose ``run.json`` cannot be read, unless no other run fits: then the
    unreadable one is returned, and reading it gives the one-line reason.
    """
    if ref is not None and not ref.strip():
        # Every id starts with the empty string: taking it as a prefix would pick a run nobody named.
        raise RunNotFound("RUN is empty: give a run id, a unique prefix of one, a path, or 'latest'")
    ref = (ref or "").strip() or "latest"
    as_path = Path(ref)
    if _is_run_candidate(as_path):
        # A run's id is its directory's name: '.' or '..' (hive resume . from inside the run) has none.
        return RunPaths(as_path.absolute().resolve() if as_path.name in ("", "..") else as_path)
    if os.sep in ref:  # run ids never contain a separator: this was meant as a path
        raise RunNotFound(f"{ref} is not a run directory (no run.json)")
    runs = list_run_dirs(runs_dir)
    if not runs:
        raise RunNotFound(_not_a_run(ref) or f"no runs in {str(runs_dir)!r}")
    if ref == "latest":
        started = {run: key for run in runs if (key := _started_key(run)) is not None}
        return max(started, key=lambda r: started[r]) if started else runs[-1]
    exact = [r for r in runs if r.id == ref]
    if exact:
        return exact[0]
    matches = [r for r in runs if r.id.startswith(ref)]
    if not matches:
        raise RunNotFound(_not_a_run(ref) or f"no run matches {ref!r} in {str(runs_dir)!r}")
    readable = [r for r in matches if _started_key(r) is not None] if len(matches) > 1 else matches
    candidates = readable or matches
    if len(candidates) > 1:
        shown = ", ".join(r.id for r in candidates[:4])
        raise RunNotFound(f"run {ref!r} is ambiguous: {len(candidates)} runs match ({shown})")
    return candidates[0]


def _not_a_run(ref: str) -> str | None:
    """Why ``ref``, matching no run id, is not a run either, if it names a directory: it was meant as one."""
    return f"{ref} is not a run directory (no run.json)" if ref != "latest" and Path(ref).is_dir() else None


def _started_key(run: RunPaths) -> str | None:
    """What orders runs by start; ``None`` for a run whose ``run.json`` cannot be read."""
    try:
        return load_run_info(run).started_at + run.id
    except UsageError:
        return None
