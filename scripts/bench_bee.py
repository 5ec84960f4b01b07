"""Measure how fast a bee process is ready and how much memory it holds before its first model call.

    .venv/bin/python scripts/bench_bee.py [--runs 7] [--http]

Each run starts ``python -m hive.bee`` with the shipped investigator role (all six tools) on a small
temporary repository. The model is a ``script:`` model whose first turn waits or, with ``--http``, the real
OpenAI provider pointed at a local socket that accepts the connection and never answers; either way the
bee sits inside its first model call with everything loaded (role, model, HTTP stack, toolbox).
Measured per run, from /proc:

- ready: seconds from spawning the process to reading its ``ready`` line;
- rss: resident memory (VmRSS) while the bee waits on its first model call;
- peak: the high-water mark of resident memory (VmHWM) at that moment.

Then the bee is told to stop and reaped. Prints one line per run and the median, min and max.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchlib import positive_int

FIRST_TURN_DELAY = 30.0
SETTLE = 0.8
"""Seconds after ``ready`` before sampling memory: enough for the bee to load its role, model and tools."""


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in kB."""
    fields: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            fields[name] = int(value.split()[0])
    return fields


def write_brief(root: Path, model: str) -> Path:
    """A small repository, a script whose first turn waits, and the brief of one bee on them; the brief's path."""
    repo = root / "repo"
    repo.mkdir()
    (repo / "app.py").write_text("def answer():\n    return 41  # off by one\n")
    script = root / "script.json"
    turns = [{"delay": FIRST_TURN_DELAY, "say": "## Found\n- app.py:2\n## Ruled out\n- none\n## Open\n- none"}]
    script.write_text(json.dumps({"bees": {"bee-1": turns}}))
    run_dir = root / "run"
    brief = run_dir / "bees" / "bee-1" / "brief.json"
    brief.parent.mkdir(parents=True)
    brief.write_text(
        json.dumps(
            {
                "bee": "bee-1",
                "problem": "Why is the answer 41?",
                "angle": "the arithmetic",
                "repo": str(repo),
                "run_dir": str(run_dir),
                "model": model or f"script:{script}",
            }
        )
    )
    return brief


def measure_once(root: Path, model: str, env: dict[str, str]) -> tuple[float, int, int]:
    brief = write_brief(root, model)
    transcript = brief.parent / "transcript.jsonl"
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "hive.bee", "--brief", str(brief)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=root / "repo",
        env=env,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        first = json.loads(proc.stdout.readline())
        ready = time.perf_counter() - started
        if first.get("type") != "ready":
            raise SystemExit(f"expected a ready line first, got {first}")
        time.sleep(SETTLE)
        status = _status(proc.pid)
        if not transcript.exists() or b'"role":"user"' not in transcript.read_bytes():
            raise SystemExit("the bee had not reached its first model call when memory was sampled")
        proc.stdin.write(b'{"type": "stop"}\n')
        proc.stdin.flush()
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return ready, status["VmRSS"], status["VmHWM"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=7)
    parser.add_argument("--http", action="store_true", help="use the OpenAI provider against a silent socket")
    args = parser.parse_args()
    env = dict(os.environ)
    model = ""
    silent: socket.socket | None = None
    if args.http:
        silent = socket.socket()
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # never accepted: the bee's request waits in the backlog
        env["OPENAI_API_KEY"] = "sk-bench-not-a-key"
        env["OPENAI_BASE_URL"] = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        model = "openai:gpt-4.1-mini"
    results = []
    try:
        for i in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="hive-bench-bee-") as tmp:
                ready, rss, peak = measure_once(Path(tmp), model, env)
            results.append((ready, rss, peak))
            print(f"run {i + 1}: ready {ready * 1000:.0f} ms, rss {rss / 1024:.1f} MB, peak {peak / 1024:.1f} MB")
    finally:
        if silent is not None:
            silent.close()
    print(f"model: {model or 'script: (first turn waits)'}")
    for label, index, unit, scale in (
        ("ready", 0, "ms", 1000.0),
        ("rss", 1, "MB", 1 / 1024),
        ("peak", 2, "MB", 1 / 1024),
    ):
        values = [r[index] * scale for r in results]
        median, low, high = statistics.median(values), min(values), max(values)
        print(f"{label:5}: median {median:.1f} {unit}, min {low:.1f}, max {high:.1f}")
    print("targets: ready <= 1000 ms, resident <= 80 MB before the first model call")


if __name__ == "__main__":
    main()
