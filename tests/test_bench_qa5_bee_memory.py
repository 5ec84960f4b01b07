"""The benchmarks' per-bee memory counts bees only: not the coordinator's fork before it has exec'd the bee.

docs/benchmarks.md's re-check read a 6-bee run's largest bee peak as 47-60 MB (38 MB before). No bee went past
39 MB: the sampler caught children between fork and exec, when they are copies of the coordinator (hive spawns
bees with a ``preexec_fn``), whose pages grew once the judge's model loaded while the bees start (f6d9065).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from bench_bee import write_brief
from benchlib import bee_samples, children_of

pytestmark = pytest.mark.slow


def _new_child(before: set[int]) -> int:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        new = set(children_of(os.getpid())) - before
        if new:
            return new.pop()
        time.sleep(0.01)
    raise AssertionError("no child appeared")


def test_a_child_between_fork_and_exec_is_not_sampled_as_a_bee(tmp_path: Path) -> None:
    brief = write_brief(tmp_path, "")
    bee = subprocess.Popen([sys.executable, "-P", "-m", "hive.bee", "--brief", str(brief)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=tmp_path / "repo")
    assert bee.stdin is not None and bee.stdout is not None
    hold, release = os.pipe()
    started: list[subprocess.Popen[bytes]] = []
    # Like the coordinator's spawn: the child runs Python code between fork and exec (here it waits there).
    spawner = threading.Thread(target=lambda: started.append(subprocess.Popen(
        [sys.executable, "-c", "pass"], preexec_fn=lambda: os.read(hold, 1))))
    try:
        assert json.loads(bee.stdout.readline())["type"] == "ready"
        before = set(children_of(os.getpid()))
        spawner.start()
        fork = _new_child(before)

        sampled = bee_samples(os.getpid())

        assert fork in children_of(os.getpid())
        assert fork not in sampled
        assert bee.pid in sampled and sampled[bee.pid].rss_kb > 0
    finally:
        os.write(release, b"go")
        if spawner.is_alive():
            spawner.join(timeout=30)
        for child in started:
            child.wait(timeout=30)
        os.close(hold)
        os.close(release)
        bee.stdin.write(b'{"type": "stop"}\n')
        bee.stdin.close()
        bee.wait(timeout=30)
