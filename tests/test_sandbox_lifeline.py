"""The lifeline: a command dies with the bee that ran it, however the bee dies.

bubblewrap's ``--die-with-parent`` leaves the sandbox's init unbound until the sandbox is set up and its command
started; a bee killed in between orphaned the sandbox. The lifeline closes that gap. Here the test process stands
for the bee: leaving :func:`lifeline` closes the pipe's write end, as a bee's death would.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from hive.tools.bash import bwrap_argv, lifeline, lifeline_argv
from tests.test_sandbox import SANDBOX_PROBLEM


def sleeper(marker: str) -> str:
    """A shell word list starting a process that sleeps, with ``marker`` on its command line."""
    return f"{sys.executable} -c 'import time; time.sleep(600)' {marker}"


def processes_with(marker: str) -> list[int]:
    """The sleepers started with ``marker`` (not the shells whose command lines name it too)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                argv = (entry / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if argv[0] == sys.executable.encode() and marker.encode() in argv:
                found.append(int(entry.name))
    return found


def until(condition: Callable[[], bool], timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def kill_all(marker: str) -> None:
    for pid in processes_with(marker):
        os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=SANDBOX_PROBLEM or "")
def test_when_the_lifeline_closes_everything_in_the_sandbox_dies() -> None:
    marker = f"hive-lifeline-{uuid.uuid4().hex}"
    bwrap = shutil.which("bwrap") or "bwrap"
    # One process escapes the command's session; the sandbox's PID namespace still holds it.
    command = f"setsid {sleeper(marker)} & {sleeper(marker)}"
    argv = bwrap_argv(bwrap, Path("/"), lifeline_argv("/bin/sh", ["/bin/sh", "-c", command], sandboxed=True), hide=())
    try:
        with lifeline() as fd:
            proc = subprocess.Popen(argv, stdin=fd, start_new_session=True)
            assert until(lambda: len(processes_with(marker)) == 2)
            time.sleep(0.2)
            assert proc.poll() is None, "the command must not read the lifeline as its own input"
        assert proc.wait(timeout=20) == 128 + signal.SIGKILL
        assert until(lambda: not processes_with(marker)), processes_with(marker)
    finally:
        proc.kill()
        proc.wait()
        kill_all(marker)


def test_unsandboxed_the_lifeline_kills_the_command_s_process_group() -> None:
    marker = f"hive-lifeline-{uuid.uuid4().hex}"
    command = f"{sleeper(marker)} & {sleeper(marker)}"
    try:
        with lifeline() as fd:
            proc = subprocess.Popen(lifeline_argv("/bin/sh", ["/bin/sh", "-c", command], sandboxed=False),
                                    stdin=fd, start_new_session=True)
            assert until(lambda: len(processes_with(marker)) == 2)
            assert proc.poll() is None
        assert proc.wait(timeout=20) == -signal.SIGKILL
        assert until(lambda: not processes_with(marker)), processes_with(marker)
    finally:
        proc.kill()
        proc.wait()
        kill_all(marker)


@pytest.mark.skipif(shutil.which("unshare") is None, reason="util-linux unshare is not installed")
def test_the_sandbox_s_kill_everything_never_runs_where_the_watcher_is_not_pid_2() -> None:
    """``kill -1`` outside a sandbox would signal every process the user may signal. Here the watcher runs in a PID
    namespace of its own (so a broken guard could harm nothing else) where it is not pid 2: nothing is killed."""
    marker = f"hive-lifeline-{uuid.uuid4().hex}"
    argv = lifeline_argv("/bin/sh", ["/bin/sh", "-c", f"{sleeper(marker)} & wait"], sandboxed=True)
    unshare = shutil.which("unshare") or "unshare"
    try:
        with lifeline() as fd:
            proc = subprocess.Popen([unshare, "--pid", "--fork", "--", *argv], stdin=fd, start_new_session=True)
            assert until(lambda: len(processes_with(marker)) == 1)
        time.sleep(1.0)  # the watcher has read end of file by now and decided
        assert len(processes_with(marker)) == 1 and proc.poll() is None
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_all(marker)
