"""Helpers for the reliability suite: real `hive start` subprocesses under faults, and what to check after."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.hive_runs import gates, hive_command, load_info, make_repo, notes, run_hive

ROUTINE_DELIVER = {"gate": "deliver", "when": {"note": "."}, "answers": {"useful": 0.1}}


class Hive:
    """One hive in a temporary directory, started as a real subprocess."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.repo = make_repo(root)
        self.runs = root / "runs"

    def args(self, model: str, judge: str, *extra: str, problem: str = "Why does the export drop rows?") -> list[str]:
        return ["start", problem, "--repo", str(self.repo), "--model", model, "--judge", judge,
                "--runs-dir", str(self.runs), "--plain", *extra]

    def run(self, model: str, judge: str, *extra: str, env: dict[str, str] | None = None,
            timeout: float = 90.0) -> subprocess.CompletedProcess[str]:
        return run_hive(self.args(model, judge, *extra), cwd=self.root, env=env, timeout=timeout)

    def start(self, model: str, judge: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        return subprocess.Popen(hive_command(*self.args(model, judge, *extra)), cwd=self.root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})

    def hive(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Another hive command (ls, show, tail, audit) over this hive's runs directory."""
        return run_hive([*args, "--runs-dir", str(self.runs)], cwd=self.root)


def wait_for(predicate: Callable[[], object], timeout: float = 30.0, why: Callable[[], str] | None = None) -> None:
    """Poll ``predicate``; on a time-out, fail with ``why()`` (what was seen) if given."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"condition not reached in time{': ' + why() if why else ''}")


def processes_matching(*patterns: str) -> str:
    """``ps`` lines (pid, parent, state, command) of the processes whose command line holds a pattern."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,stat,args"], capture_output=True, text=True, check=False).stdout
    return "\n".join(line for line in out.splitlines() if any(p in line for p in patterns)) or "(none)"


def bee_pids(marker: str) -> list[int]:
    """Processes whose command line holds ``--brief <marker>`` (a bee of that run, or of that bee)."""
    out = subprocess.run(["pgrep", "-f", "--", f"--brief {marker}"], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


def peak_memory_kib(pid: int) -> int | None:
    """The process's peak resident set (VmHWM) in KiB, or None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return None


def watch_peak_memory(proc: subprocess.Popen[str], timeout: float) -> tuple[str, str, int]:
    """Wait for ``proc`` while sampling its VmHWM; return its stdout, stderr and the last peak seen (KiB).

    VmHWM is a high-water mark, so the last sample before exit is the peak of the whole run. Output is read
    by threads (communicate) so that a chatty process never blocks on a full pipe.
    """
    import threading

    peak = 0
    outputs: list[str] = []

    def drain() -> None:
        outputs.extend(proc.communicate(timeout=timeout))

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    while reader.is_alive():
        seen = peak_memory_kib(proc.pid)
        if seen is not None and proc.returncode is None:
            peak = max(peak, seen)
        reader.join(0.05)
    assert len(outputs) == 2, "the hive did not end in time"
    return outputs[0], outputs[1], peak


def run_files(run_dir: Path) -> list[Path]:
    """Every file a run wrote."""
    return sorted(p for p in run_dir.rglob("*") if p.is_file())


def assert_one_publish_decision_per_utterance(run_dir: Path) -> None:
    """Every utterance of every bee has exactly one publish decision, and no bee's sequence has a gap."""
    uids = [d.utterance for d in gates(run_dir) if d.gate == "publish"]
    assert all(uids) and len(uids) == len(set(uids)), "an utterance with no or several publish decisions"
    for bee in {u.split("#")[0] for u in uids if u}:
        seqs = sorted(int(u.split("#")[1]) for u in uids if u and u.startswith(bee + "#"))
        assert seqs == list(range(1, len(seqs) + 1)), (bee, seqs[:10])


def assert_audit_works(hive: Hive) -> None:
    done = hive.hive("audit", "latest", "--json")
    assert done.returncode == 0, done.stderr


__all__ = ["ROUTINE_DELIVER", "Hive", "assert_audit_works", "assert_one_publish_decision_per_utterance",
           "bee_pids", "gates", "load_info", "notes", "peak_memory_kib", "run_files", "wait_for",
           "watch_peak_memory"]
