"""Start-up and footprint: ``hive --help``, a bee's start-up and memory, the coordinator's memory with the
local judge loaded, and all six bees plus the coordinator together.

    .venv/bin/python scripts/bench_startup.py [--runs 5]

Per run:

- help: wall seconds of ``hive --help`` through the installed entry point (a fresh process each time), and
  of a bare ``python -c pass`` right after it, the same-run baseline for this machine's load;
- bee: :func:`bench_bee.measure_once` (spawn ``python -m hive.bee`` with the shipped investigator role, time
  to its ``ready`` line, VmRSS/VmHWM while it waits in its first model call);
- run: a real scripted ``hive start`` with six bees and ``--judge local`` (every turn waits 0.3 s, so all
  six bees are alive together for several seconds), sampled from /proc every 20 ms: the coordinator's
  VmHWM (its peak resident memory, the local model loaded and judging), and the largest sum of VmRSS of
  the coordinator and its live bees seen in one sample.

Targets (issue 7): ``hive --help`` <= 0.5 s; a bee ready <= 1 s and <= 80 MB before its first model call;
the coordinator with the local judge <= 500 MB; all six bees and the coordinator well under 1 GB.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_bee import measure_once
from benchlib import (
    SUBSYSTEMS,
    header,
    make_repo,
    median,
    mixed_utterances,
    positive_int,
    run_watched,
    script_turns,
    start_args,
    write_json,
)

HIVE = Path(os.environ.get("VIRTUAL_ENV", Path(__file__).resolve().parents[1] / ".venv")) / "bin" / "hive"


def wall(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def help_time() -> tuple[float, float]:
    """``hive --help`` and, measured right after it as the same-run baseline, a bare interpreter start."""
    return wall([str(HIVE), "--help"]), wall([sys.executable, "-c", "pass"])


def run_footprint(root: Path, run: int) -> tuple[float, float, float, int]:
    """(coordinator VmHWM MB, peak sum of RSS MB, largest bee VmHWM MB, most bees alive at once)."""
    rng = random.Random(run)
    bees = {f"bee-{i + 1}": script_turns(mixed_utterances(rng, 12, s), delay=0.3) for i, s in enumerate(SUBSYSTEMS)}
    script = write_json(root / "script.json", {"bees": bees, "answer": "The batching drops the final batch."})
    runs_dir = root / f"runs-{run}"
    runs_dir.mkdir()
    m = run_watched(start_args("Why does the nightly export drop rows?", root / "repo", script, runs_dir, "local",
                               [s.angle for s in SUBSYSTEMS]), cwd=root, runs_dir=runs_dir)
    if m.returncode != 0:
        raise SystemExit(f"hive start failed ({m.returncode}):\n{m.stderr[-2000:]}")
    return m.coordinator_hwm_kb / 1024, m.peak_sum_rss_kb / 1024, max(m.bee_hwm_kb.values()) / 1024, m.peak_live_bees


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=5)
    args = parser.parse_args()
    header("start-up and footprint")
    helps: list[float] = []
    bares: list[float] = []
    bees, runs = [], []
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="hive-bench-startup-") as tmp:
        root = Path(tmp)
        make_repo(root)
        for run in range(args.runs):
            help_s, bare_s = help_time()
            helps.append(help_s)
            bares.append(bare_s)
            with tempfile.TemporaryDirectory(prefix="hive-bench-bee-") as bee_tmp:
                ready, rss, peak = measure_once(Path(bee_tmp), "", env)
            bees.append((ready, rss / 1024, peak / 1024))
            runs.append(run_footprint(root, run))
            c, total, bee_peak, live = runs[-1]
            print(f"run {run + 1}: hive --help {help_s:.2f} s (python -c pass {bare_s:.2f} s); "
                  f"bee ready {ready * 1000:.0f} ms, "
                  f"rss {rss / 1024:.1f} MB, peak {peak / 1024:.1f} MB; 6-bee run: coordinator peak {c:.0f} MB, "
                  f"all together {total:.0f} MB "
                  f"({live} bees alive), largest bee peak {bee_peak:.0f} MB")
    print(f"\nmedians over {args.runs} runs:")
    print("| measure | median | min | max | target |")
    print("|---|---:|---:|---:|---|")
    rows = [
        ("`hive --help` wall, s", helps, "<= 0.5 s"),
        ("bare `python -c pass` wall (same-run baseline), s", bares, ""),
        ("`hive --help` / bare interpreter", [h / b for h, b in zip(helps, bares, strict=True)], ""),
        ("bee ready, ms", [b[0] * 1000 for b in bees], "<= 1000 ms"),
        ("bee resident before first model call (VmRSS), MB", [b[1] for b in bees], "<= 80 MB"),
        ("bee peak resident (VmHWM) at that point, MB", [b[2] for b in bees], "<= 80 MB"),
        ("coordinator peak resident with the local judge (VmHWM), MB", [r[0] for r in runs], "<= 500 MB"),
        ("largest bee peak resident during the run, MB", [r[2] for r in runs], "<= 80 MB"),
        ("coordinator + live bees, largest sum of VmRSS, MB", [r[1] for r in runs], "well under 1 GB"),
    ]
    for label, values, target in rows:
        print(f"| {label} | {median(values):.2f} | {min(values):.2f} | {max(values):.2f} | {target} |")
    print(f"bees alive together at the peak sample: {[r[3] for r in runs]}")


if __name__ == "__main__":
    main()
