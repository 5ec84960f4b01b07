"""Measure what the bees' tools cost per call: the bubblewrap sandbox against no sandbox, ripgrep against the
pure-Python search.

    .venv/bin/python scripts/bench_tools.py [--repo .] [--runs 15]

On ``--repo`` (default: this checkout), through :class:`hive.tools.registry.Toolbox` exactly as a bee calls
them, median and p90 wall time per call of:

- ``bash`` running ``true`` and ``python -c pass``, sandboxed and unsandboxed (``--unsafe-bash`` path), so the
  difference is bubblewrap's start-up;
- ``grep`` for a regular expression over the whole repository, and ``find`` for ``*.py``, with ripgrep and with
  the Python fallback (``rg_path=None``);
- ``read`` of a 2000-line slice of the largest text file.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

from benchlib import existing_dir, header, median, percentile, positive_int

from hive.tools.registry import ALL_TOOLS, Toolbox


async def timed(box: Toolbox, tool: str, args: dict[str, Any], runs: int) -> tuple[list[float], str]:
    seconds = []
    activity = ""
    for _ in range(runs):
        started = time.perf_counter()
        result = await box.call(tool, args)
        seconds.append(time.perf_counter() - started)
        activity = result.activity
    return seconds, activity


def largest_text_file(repo: Path) -> str:
    files = [p for p in repo.rglob("*.py") if ".venv" not in p.parts and p.is_file()]
    return max(files, key=lambda p: p.stat().st_size).relative_to(repo).as_posix()


async def main(repo: Path, runs: int) -> None:
    header("bench_tools: cost per tool call")
    print(f"repo: {repo} · runs per line: {runs} · bwrap: {shutil.which('bwrap')} · rg: {shutil.which('rg')}")
    sandboxed = Toolbox(repo, ALL_TOOLS)
    unsandboxed = Toolbox(repo, ["bash"], unsafe_bash=True, bwrap_path="/nonexistent/bwrap")
    fallback = Toolbox(repo, ["grep", "find"], rg_path=None)
    await sandboxed.call("bash", {"command": "true"})  # the one-time sandbox probe is not a per-call cost
    cases: list[tuple[str, Toolbox, str, dict[str, Any]]] = [
        ("bash true, sandboxed", sandboxed, "bash", {"command": "true"}),
        ("bash true, unsandboxed", unsandboxed, "bash", {"command": "true"}),
        ("bash python -c pass, sandboxed", sandboxed, "bash", {"command": "python -c pass"}),
        ("bash python -c pass, unsandboxed", unsandboxed, "bash", {"command": "python -c pass"}),
        ("grep, ripgrep", sandboxed, "grep", {"pattern": r"def \w+\(self"}),
        ("grep, python fallback", fallback, "grep", {"pattern": r"def \w+\(self"}),
        ("find *.py, ripgrep", sandboxed, "find", {"pattern": "*.py"}),
        ("find *.py, python fallback", fallback, "find", {"pattern": "*.py"}),
        ("read 2000 lines", sandboxed, "read", {"path": largest_text_file(repo)}),
    ]
    try:
        print(f"{'call':<36} {'median ms':>10} {'p90 ms':>8}  last activity")
        for label, box, tool, args in cases:
            seconds, activity = await timed(box, tool, args, runs)
            print(f"{label:<36} {median(seconds) * 1000:>10.1f} {percentile(seconds, 90) * 1000:>8.1f}  {activity}")
    finally:
        for box in (sandboxed, unsandboxed, fallback):
            await box.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=existing_dir, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--runs", type=positive_int, default=15)
    options = parser.parse_args()
    asyncio.run(main(options.repo.resolve(), options.runs))
