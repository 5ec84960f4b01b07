"""Measure ``hive tail --follow`` display latency: from a board line being written to tail printing it.

A writer process appends notes to a fresh run's board.jsonl at random intervals (each note carries the
wall-clock time it was written); ``hive tail RUN --follow`` follows the board in its own process; this
script reads tail's output as it comes and takes the difference. Both displays are timed, one after the
other, each with its own writer: ``--json`` (one line per record, the note's ``written`` time in it) and
the human display (a note's header line ends with its id, whose ``written`` time is read back from the
board afterwards). Usage:

    .venv/bin/python scripts/bench_tail.py [--lines 300] [--min-gap-ms 2] [--max-gap-ms 60]
                                           [--display both|json|human]

Prints p50 / p95 / max in milliseconds per display (the issue's bar: p95 ≤ 100 ms).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import positive_int

WRITER = r"""
import json, os, random, sys, time
run = sys.argv[1]
lines, low, high = int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def run_json(status):
    info = {"id": os.path.basename(run), "problem": "bench", "repo": ".", "status": status,
            "pid": os.getpid()}
    with open(os.path.join(run, ".run.json.tmp"), "w") as f:
        json.dump(info, f)
    os.replace(os.path.join(run, ".run.json.tmp"), os.path.join(run, "run.json"))
run_json("running")
sys.stdin.readline()  # wait until tail is following
fd = os.open(os.path.join(run, "board.jsonl"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
rng = random.Random(7)
for i in range(lines):
    time.sleep(rng.uniform(low, high) / 1000)
    note = {"type": "note", "id": f"n-{i}", "bee": "bee-1", "kind": "finding", "score": 0.9,
            "text": f"FOUND: bench line {i}", "written": time.time()}
    os.write(fd, (json.dumps(note) + "\n").encode())
time.sleep(0.2)
run_json("finished")
"""


NOTE_HEADER = re.compile(r" (n-\d+)(?: ->.*)?$")
"""The human display's first line of a note ends with its id (and its recipients, when it has any)."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=positive_int, default=300)
    parser.add_argument("--min-gap-ms", type=float, default=2.0)
    parser.add_argument("--max-gap-ms", type=float, default=60.0)
    parser.add_argument("--display", choices=("both", "json", "human"), default="both",
                        help="which output of hive tail to time (default: both, one after the other)")
    args = parser.parse_args()

    failed = False
    for display in ("json", "human") if args.display == "both" else (args.display,):
        latencies = measure(display, args.lines, args.min_gap_ms, args.max_gap_ms)
        if len(latencies) != args.lines:
            print(f"tail ({display}) printed {len(latencies)} of {args.lines} notes", file=sys.stderr)
            failed = True
            continue
        ordered = sorted(latencies)
        p95 = ordered[max(0, round(0.95 * len(ordered)) - 1)]
        command = "hive tail RUN --follow" + (" --json" if display == "json" else "")
        print(f"{command}: display latency over {len(ordered)} lines written every "
              f"{args.min_gap_ms:g}-{args.max_gap_ms:g} ms by another process:")
        print(f"  p50 {statistics.median(ordered):.1f} ms   p95 {p95:.1f} ms   max {ordered[-1]:.1f} ms")
    return 1 if failed else 0


def measure(display: str, lines: int, min_gap_ms: float, max_gap_ms: float) -> list[float]:
    """Milliseconds from each note's write to ``hive tail --follow`` printing it, in one display."""
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "20261130-000000-bench"
        run.mkdir()
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(run), str(lines), str(min_gap_ms),
                                   str(max_gap_ms)], stdin=subprocess.PIPE, text=True)
        while not (run / "run.json").exists():
            time.sleep(0.01)
        command = [sys.executable, "-m", "hive", "tail", str(run), "--follow"]
        if display == "json":
            command.append("--json")
        tail = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, bufsize=1)
        _wait_until_watching(tail.pid)
        assert writer.stdin is not None and tail.stdout is not None
        writer.stdin.write("go\n")
        writer.stdin.flush()
        latencies = []
        shown_at: dict[str, float] = {}
        for line in tail.stdout:
            shown = time.time()
            if display == "json":
                record = json.loads(line)
                if "written" in record:
                    latencies.append((shown - record["written"]) * 1000)
            elif match := NOTE_HEADER.search(line.rstrip("\n")):
                shown_at.setdefault(match.group(1), shown)
        tail.wait(30)
        writer.wait(30)
        if display == "human":
            written = {}
            for raw in (run / "board.jsonl").read_text().splitlines():
                record = json.loads(raw)
                written[record["id"]] = record["written"]
            latencies = [(shown - written[note]) * 1000 for note, shown in shown_at.items() if note in written]
    return latencies


def _wait_until_watching(pid: int, timeout: float = 30.0) -> None:
    """Until the tail process holds an inotify watch (Linux); elsewhere, a short pause."""
    fdinfo = Path(f"/proc/{pid}/fdinfo")
    if not fdinfo.is_dir():
        time.sleep(2.0)
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in fdinfo.iterdir():
            try:
                if "inotify wd:" in entry.read_text():
                    return
            except OSError:
                continue
        time.sleep(0.01)
    raise SystemExit("tail never started watching")


if __name__ == "__main__":
    sys.exit(main())
