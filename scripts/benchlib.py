"""Shared pieces of the benchmark scripts: count options, the machine header, percentiles, plausible agent
findings, and a scripted ``hive start`` run watched from /proc.

Not a test helper and not part of hive: the scripts under ``scripts/`` import it as a sibling module.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


# --------------------------------------------------------------------------- command-line options


def positive_int(text: str) -> int:
    """An argparse ``type`` for counts (runs, notes, lines): a whole number of at least 1, else argparse's
    one-line usage error (exit 2) instead of a traceback deep in the measurement."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is less than 1")
    return value


def positive_ints(text: str) -> list[int]:
    """An argparse ``type`` for a comma-separated list of counts, e.g. ``100,500,2000``, each at least 1."""
    return [positive_int(part.strip()) for part in text.split(",")]


def existing_dir(text: str) -> Path:
    """An argparse ``type`` for a directory to read (a repository, a checkout): one usage line, not a traceback
    or a measurement of something else."""
    path = Path(text)
    if not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a directory")
    return path


def existing_file(text: str) -> Path:
    """An argparse ``type`` for a file to read (texts, labelled items)."""
    path = Path(text)
    if not path.is_file():
        raise argparse.ArgumentTypeError(f"{text!r} is not a file")
    return path


def plot_path(text: str) -> Path:
    """An argparse ``type`` for ``--plot``: checked before the measurement, which takes minutes, instead of
    after it (a missing matplotlib printed a hint and exited 0; a missing directory was a traceback)."""
    path = Path(text)
    if not path.parent.is_dir():
        raise argparse.ArgumentTypeError(f"{str(path.parent)!r} is not a directory")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise argparse.ArgumentTypeError("drawing needs matplotlib: .venv/bin/pip install -e '.[bench]'") from None
    return path


# --------------------------------------------------------------------------- reporting


def machine() -> str:
    """nproc, CPU model, load average, Python and the date: the line every benchmark prints first."""
    model = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    return (f"machine: {os.cpu_count()} cores ({os.sched_getaffinity(0).__len__()} usable), {model}, "
            f"load {load}, Python {platform.python_version()}, {date}")


def header(title: str) -> None:
    print(f"# {title}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    print(machine())


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100), linear between closest ranks; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


# --------------------------------------------------------------------------- plausible agent findings


@dataclass(frozen=True)
class Subsystem:
    """One part of an imaginary service, with the vocabulary a bee investigating it would use."""

    name: str
    angle: str
    files: tuple[str, ...]
    functions: tuple[str, ...]
    names: tuple[str, ...]
    symptoms: tuple[str, ...]


SUBSYSTEMS: tuple[Subsystem, ...] = (
    Subsystem(
        "batching",
        "Trace how export/nightly.py splits rows into batches and whether every row reaches a batch.",
        ("export/nightly.py", "export/batching.py", "tests/test_batching.py"),
        ("batches", "chunk_rows", "flush_batch", "iter_pages"),
        ("BATCH_SIZE", "page_size", "offset", "remainder"),
        ("the final partial batch is never yielded", "the last page is skipped when the count is exact",
         "an off-by-one in the range end drops the tail", "flush_batch is not called after the loop"),
    ),
    Subsystem(
        "config",
        "Check the configuration: settings files, environment variables, cutoffs and time zones.",
        ("export/config.py", "settings/prod.toml", "export/env.py"),
        ("load_settings", "cutoff_time", "read_env", "parse_tz"),
        ("CUTOFF_HOUR", "EXPORT_TZ", "DRY_RUN", "MAX_ROWS"),
        ("the cutoff is computed in UTC while rows are stamped in local time",
         "MAX_ROWS defaults to 1000 when the variable is unset", "DRY_RUN is read as a string, so 'false' is true",
         "the settings file overrides the environment silently"),
    ),
    Subsystem(
        "database",
        "Inspect the database layer: the queries, the joins and how NULLs and duplicates come back.",
        ("export/db.py", "export/queries.sql", "migrations/0042_emails.py"),
        ("fetch_rows", "select_since", "open_cursor", "dedupe_ids"),
        ("email", "updated_at", "customer_id", "cursor.arraysize"),
        ("the inner join on customers drops rows without a customer", "rows with a NULL email are filtered",
         "select_since uses > instead of >= and loses rows stamped exactly at the cutoff",
         "the cursor fetches 500 rows at a time and the last fetchmany is ignored"),
    ),
    Subsystem(
        "writer",
        "Follow the CSV writer: encoding, quoting, flushing and the file that lands in the bucket.",
        ("export/writer.py", "export/csvfmt.py", "export/upload.py"),
        ("write_csv", "quote_field", "upload_file", "close_writer"),
        ("newline", "QUOTE_MINIMAL", "encoding", "buffer_size"),
        ("the file is uploaded before the writer is flushed", "a newline inside a field splits one row into two",
         "non-UTF-8 names raise and the row is skipped with a bare except", "the temp file is closed twice"),
    ),
    Subsystem(
        "scheduler",
        "Look at scheduling and retries: cron, locks, overlapping runs and partial reruns.",
        ("deploy/cron.yaml", "export/lock.py", "export/retry.py"),
        ("acquire_lock", "run_nightly", "retry_failed", "schedule_next"),
        ("LOCK_TTL", "schedule", "attempt", "last_success"),
        ("two runs overlap when the job takes longer than LOCK_TTL",
         "a retry restarts from last_success and skips rows",
         "the cron entry runs at 00:00 UTC, before the day is complete",
         "the lock is released in a finally too early"),
    ),
    Subsystem(
        "tests",
        "Reproduce the drop: run the export and its tests, count rows read against rows written.",
        ("tests/test_nightly.py", "tests/fixtures/rows.csv", "tests/conftest.py"),
        ("test_row_count", "make_rows", "run_export", "count_lines"),
        ("fixture", "expected", "rows_read", "rows_written"),
        ("the test fixture has exactly 1000 rows, so the bug never shows", "rows_read is 1003 and rows_written 1000",
         "the test compares against a hard-coded 1000", "the fixture generator seeds the clock at midnight"),
    ),
)

_FOUND = (
    "FOUND: {file}:{line} {symptom}; {function}() is where it happens.",
    "FOUND: running `python3 -m {module} --dry-run` shows {a} rows read and {b} written: {symptom}.",
    "FOUND: {function}() at {file}:{line} reads {name} = {value}, so {symptom}.",
    "FOUND: git log -L {line},+{span}:{file} shows commit {sha} changed {function}(); since then {symptom}.",
    "FOUND: a traceback in {function}() ({file}:{line}): KeyError: '{name}' when {name} is missing.",
    "FOUND: {file}:{line} passes {name} straight through without a check; with {value} {symptom}.",
)
_DEAD_END = (
    "DEAD END: {function}() in {file} handles {name} correctly; {a} of {a} rows pass through it.",
    "DEAD END: checked {file}:{line}: {name} = {value} matches production, so {function}() is not the cause.",
    "DEAD END: grep for {name} across {file} finds only the one use at line {line}; nothing drops rows there.",
)
_DECIDED = (
    "DECIDED: the fix goes in {function}() in {file}: {fix}.",
    "DECIDED: we treat {file}:{line} as the root cause and leave {other} alone.",
)
_BLOCKED = (
    "BLOCKED: {module} needs psycopg2 and it is not installed in the sandbox, so {function}() cannot run.",
)
_ROUTINE = (
    "Let me read {file} around line {line} to see how {function}() handles {name}.",
    "Next I will run the tests for {module} and compare the counts.",
    "Looking at how {name} flows from {function}() into the rest of the export.",
    "I'll grep for {name} to find every place that sets it before going further.",
    "Reading {file} next; the other investigators cover the rest.",
    "Checking the git history of {file} for recent changes to {function}().",
)
_FIXES = ("iterate with range(0, len(rows), size)", "compare with >= at the cutoff", "flush before upload",
          "read the variable with a strict boolean parser", "use a left join and keep rows without a customer",
          "extend the lock for the whole run")

_VERBS = ("load", "parse", "build", "merge", "sync", "fetch", "flush", "emit", "scan", "split", "check", "apply",
          "normalize", "resolve", "encode")
_NOUNS = ("rows", "batch", "cursor", "window", "token", "header", "offset", "chunk", "record", "stamp", "page",
          "index", "queue", "bucket", "manifest")
_DETAILS = (
    "the value comes from {ident}() in {file2}",
    "{ident2} is {value} at that point",
    "seen with customer_id {n} and {m} others in the {month} data",
    "the log line reads '{ident} done in {n} ms' right before it",
    "{ident}() is only called from {ident2}()",
    "the same happens with --limit {m}",
    "pytest -k {ident} reproduces it in {m} of {n} runs",
    "strace shows {m} write calls for {n} rows",
    "the comment above it says the {noun} was meant to be optional",
    "it was added in {sha2} by the {month} refactor",
)
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October")

KIND_OF_TEMPLATES = {"finding": _FOUND, "dead_end": _DEAD_END, "decision": _DECIDED, "blocker": _BLOCKED,
                     "routine": _ROUTINE}


def utterance(rng: random.Random, subsystem: Subsystem, kind: str) -> str:
    """One plausible utterance of ``kind`` (finding, dead_end, decision, blocker, routine) about
    ``subsystem``, with enough varied detail (paths, lines, numbers, hashes) that two are rarely alike."""
    other = rng.choice([s for s in SUBSYSTEMS if s is not subsystem])
    a = rng.randint(200, 5000)
    values = {
        "file": rng.choice(subsystem.files),
        "line": rng.randint(3, 480),
        "span": rng.randint(2, 30),
        "function": rng.choice(subsystem.functions),
        "name": rng.choice(subsystem.names),
        "symptom": rng.choice(subsystem.symptoms),
        "value": rng.choice([str(rng.randint(0, 2000)), "None", "''", "'0'", f"{rng.randint(1, 59)}m"]),
        "module": rng.choice([f for f in subsystem.files if f.endswith(".py")]).removesuffix(".py").replace("/", "."),
        "a": a,
        "b": a - rng.randint(1, 40),
        "sha": f"{rng.getrandbits(28):07x}",
        "fix": rng.choice(_FIXES),
        "other": rng.choice(other.files),
    }
    values |= {
        "ident": f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}",
        "ident2": f"{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}",
        "noun": rng.choice(_NOUNS),
        "file2": rng.choice(other.files),
        "n": rng.randint(100, 9000),
        "m": rng.randint(2, 99),
        "month": rng.choice(_MONTHS),
        "sha2": f"{rng.getrandbits(28):07x}",
    }
    text = rng.choice(KIND_OF_TEMPLATES[kind]).format(**values)
    if kind == "routine":
        return text
    details = rng.sample(_DETAILS, rng.randint(1, 2))
    return text.rstrip(".") + "; " + "; ".join(d.format(**values) for d in details) + "."


def mixed_utterances(rng: random.Random, n: int, subsystem: Subsystem | None = None) -> list[str]:
    """``n`` utterances in the mix a bee produces: ~45% routine, 35% findings, 12% dead ends, 6% decisions,
    2% blockers."""
    kinds = ["routine"] * 45 + ["finding"] * 35 + ["dead_end"] * 12 + ["decision"] * 6 + ["blocker"] * 2
    return [utterance(rng, subsystem or rng.choice(SUBSYSTEMS), rng.choice(kinds)) for _ in range(n)]


# --------------------------------------------------------------------------- a scripted run, watched


def make_repo(root: Path) -> Path:
    """A small repository for the bees' tool calls."""
    repo = root / "repo"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "nightly.py").write_text(
        "BATCH = 250\n\n\ndef batches(rows, size=BATCH):\n"
        "    for start in range(0, len(rows) - size + 1, size):\n        yield rows[start:start + size]\n"
    )
    (repo / "export" / "config.py").write_text("TIMEZONE = 'UTC'\nCUTOFF_HOUR = 0\n")
    (repo / "README.md").write_text("A tiny export job.\n")
    return repo


def script_turns(texts: Sequence[str], delay: float = 0.0) -> list[dict[str, Any]]:
    """One model turn per text, each with a real tool call so the bee goes on (a ``grep`` for a different
    pattern each time: the bee's loop guard stops a bee repeating one call), then a final report."""
    turns: list[dict[str, Any]] = []
    for i, text in enumerate(texts):
        turn: dict[str, Any] = {"say": text, "tools": [{"name": "grep", "args": {"pattern": f"rows_{i}"}}]}
        if delay:
            turn["delay"] = delay
        turns.append(turn)
    turns.append({"say": "## Found\n- see my notes\n\n## Ruled out\n- nothing\n\n## Open\n- nothing"})
    return turns


@dataclass
class ProcSample:
    cpu_s: float
    children_cpu_s: float
    rss_kb: int
    hwm_kb: int


def proc_sample(pid: int) -> ProcSample | None:
    """CPU (own, and of reaped children) and memory of one process from /proc; None once it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    # fields[0] is the state (field 3); utime, stime, cutime, cstime are fields 14–17
    utime, stime, cutime, cstime = (int(x) for x in fields[11:15])
    mem = {}
    for line in status.splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            mem[name] = int(value.split()[0])
    if "VmRSS" not in mem:  # a zombie has no memory lines
        return None
    return ProcSample((utime + stime) / CLOCK_TICKS, (cutime + cstime) / CLOCK_TICKS, mem["VmRSS"],
                      mem.get("VmHWM", 0))


def bee_samples(coordinator: int) -> dict[int, ProcSample]:
    """CPU and memory of the children of ``coordinator`` that run a bee (``python -m hive.bee``), by pid.

    A child is left out until it has exec'd the bee. Between fork and exec it is a copy of the coordinator: hive
    spawns bees with a ``preexec_fn`` (a real fork that runs Python code, not a vfork), so its VmRSS and VmHWM are
    the coordinator's pages at that instant. Since the judge's model loads while the bees start (``f6d9065``), that
    read as a 47-67 MB "bee peak" where no bee ever went past 39 MB. The command line is read before the status:
    once it names the bee, the exec has happened, and the status read after it is the bee's own.
    """
    samples: dict[int, ProcSample] = {}
    for child in children_of(coordinator):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"hive.bee" not in argv:
            continue
        sample = proc_sample(child)
        if sample is not None:
            samples[child] = sample
    return samples


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``, from every thread's ``children`` file."""
    pids: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                pids += [int(p) for p in (task / "children").read_text().split()]
            except OSError:
                continue
    except OSError:
        pass
    return pids


@dataclass
class RunMeasurement:
    """What one watched ``hive start`` cost."""

    wall_s: float
    coordinator_cpu_s: float
    """The coordinator's own CPU: its total at exit minus what its reaped children (bees, git) used."""
    total_cpu_s: float
    coordinator_hwm_kb: int
    peak_sum_rss_kb: int
    """The largest sum of resident memory of the coordinator and its live bees seen in one sample."""
    peak_live_bees: int
    run_dir: Path
    returncode: int
    stderr: str = ""
    samples: int = 0
    bee_hwm_kb: dict[int, int] = field(default_factory=dict)
    """Each bee's peak resident memory (VmHWM) by pid, sampled only once it runs the bee (:func:`bee_samples`)."""


def run_watched(args: Sequence[str], *, cwd: Path, runs_dir: Path, interval: float = 0.02,
                timeout: float = 300.0) -> RunMeasurement:
    """Run ``python -m hive <args>`` and sample it and its children from /proc every ``interval`` seconds."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    last: ProcSample | None = None
    hwm = peak_sum = peak_live = samples = 0
    bee_hwm: dict[int, int] = {}
    # stderr goes to a file: a pipe nobody reads could fill up and stall the run
    with tempfile.TemporaryFile() as err_file:
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "hive", *args], cwd=cwd, env=env,
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err_file)
        while True:
            # wait4 rather than Popen.poll: its rusage is the coordinator's and its reaped children's CPU
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > started + timeout:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"hive did not finish within {timeout:.0f} s")
            sample = proc_sample(proc.pid)
            if sample is not None:
                samples += 1
                last = sample
                hwm = max(hwm, sample.hwm_kb)
                bees = bee_samples(proc.pid)
                for bee, bee_sample in bees.items():
                    bee_hwm[bee] = max(bee_hwm.get(bee, 0), bee_sample.hwm_kb)
                peak_sum = max(peak_sum, sample.rss_kb + sum(b.rss_kb for b in bees.values()))
                peak_live = max(peak_live, len(bees))
            time.sleep(interval)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        err_file.seek(0)
        stderr = err_file.read().decode(errors="replace")
    total_cpu = usage.ru_utime + usage.ru_stime
    # The last sample is at most one interval old: the coordinator's own CPU is short by at most that much.
    own = last.cpu_s if last else 0.0
    runs = [p for p in runs_dir.iterdir() if (p / "run.json").is_file()]
    run_dir = max(runs, key=lambda p: p.stat().st_mtime) if runs else runs_dir
    return RunMeasurement(wall, own, total_cpu, hwm, peak_sum, peak_live, run_dir, proc.returncode, stderr,
                          samples, bee_hwm)


def start_args(problem: str, repo: Path, script: Path, runs_dir: Path, judge: str, angles: Sequence[str],
               *extra: str) -> list[str]:
    """``hive start`` arguments for a scripted run with fixed angles and a plain view."""
    args = ["start", problem, "--repo", str(repo), "--model", f"script:{script}", "--judge", judge,
            "--runs-dir", str(runs_dir), "--plain", "--max-steps", "200", "--dispute-timeout", "600"]
    for angle in angles:
        args += ["--angle", angle]
    return [*args, *extra]


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data))
    return path
