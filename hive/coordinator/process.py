"""One bee as an OS process: spawn, talk JSON lines, and make sure it dies with us.

A bee is started in its own process group with a parent-death signal (``PR_SET_PDEATHSIG``), so even a
coordinator killed with SIGKILL leaves no bee behind: the kernel sends the bee SIGKILL when we die.
Its stdout is read in bounded chunks, so a bee flooding garbage or one 50 MB line cannot exhaust memory:
over-long lines, lines that are not protocol messages and messages in another bee's name are dropped and
counted.

``HIVE_BEE_COMMAND`` (for tests and debugging only) replaces the bee's command, ``python -m hive.bee``; it
is split like a shell command line and gets ``--brief <path>`` appended.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import shlex
import signal
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import orjson
from pydantic import ValidationError

from hive.records import BEE_MESSAGE_ADAPTER, BeeMessage, CoordinatorMessage
from hive.store import dumps

log = logging.getLogger("hive.coordinator")

MAX_LINE_BYTES = 1 << 20
BEE_COMMAND_VAR = "HIVE_BEE_COMMAND"
_PR_SET_PDEATHSIG = 1


def bee_command(env: dict[str, str]) -> list[str]:
    """The command that starts a bee: ``HIVE_BEE_COMMAND`` if set (tests, debugging), else ``python -P -m hive.bee``.

    ``-P`` keeps the working directory off ``sys.path``: people start hive from inside the repository under
    investigation, and a file there named like a module the bee imports (``orjson.py``) would otherwise run
    as the bee, outside the sandbox, with the API keys in its environment.
    """
    override = env.get(BEE_COMMAND_VAR, "").strip()
    return shlex.split(override) if override else [sys.executable, "-P", "-m", "hive.bee"]


def _find_prctl() -> Callable[..., int] | None:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux
        return None


_prctl = _find_prctl()
"""Looked up once, in the parent: the child of a fork must not load libraries (``dlopen``), since another thread
of the coordinator (the judge's model loading) may hold the loader's lock at the moment of the fork."""


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class BeeProcess:
    """A running bee. Messages from it arrive through :meth:`messages`."""

    def __init__(self, bee: str, proc: asyncio.subprocess.Process, stderr_path: Path) -> None:
        self.bee = bee
        self.proc = proc
        self.stderr_path = stderr_path
        self.dropped_lines = 0

    @classmethod
    async def spawn(cls, bee: str, brief_path: Path, env: dict[str, str]) -> BeeProcess:
        stderr_path = brief_path.parent / "stderr.log"
        stderr = os.open(stderr_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            proc = await asyncio.create_subprocess_exec(
                *bee_command(env), "--brief", str(brief_path),
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=stderr,
                env=env,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                limit=MAX_LINE_BYTES,
            )
        finally:
            os.close(stderr)
        return cls(bee, proc, stderr_path)

    @property
    def pid(self) -> int:
        return self.proc.pid

    async def messages(self) -> AsyncIterator[BeeMessage]:
        """Protocol messages from the bee until its stdout closes. Garbage is dropped, not raised."""
        assert self.proc.stdout is not None
        reader = self.proc.stdout
        pending = b""
        discarding = False
        while True:
            chunk = await reader.read(1 << 16)
            if not chunk:
                break
            pending += chunk
            while True:
                end = pending.find(b"\n")
                if end < 0:
                    if len(pending) > MAX_LINE_BYTES:
                        pending = b""
                        discarding = True
                    break
                line, pending = pending[:end], pending[end + 1 :]
                if discarding:
                    discarding = False
                    self._drop("an over-long line")
                    continue
                message = self._parse(line)
                if message is not None:
                    yield message

    def _parse(self, line: bytes) -> BeeMessage | None:
        if not line.strip():
            return None
        try:
            message = BEE_MESSAGE_ADAPTER.validate_python(orjson.loads(line))
        except (orjson.JSONDecodeError, ValidationError):
            self._drop("a line that is not a protocol message")
            return None
        if message.bee != self.bee:  # a bee speaks for itself only: never route words under another name
            self._drop(f"a message in the name of {message.bee!r}")
            return None
        return message

    def _drop(self, what: str) -> None:
        self.dropped_lines += 1
        if self.dropped_lines <= 3:
            log.warning("%s: dropped %s from its stdout", self.bee, what)

    async def send(self, message: CoordinatorMessage) -> bool:
        """Write one message to the bee's stdin; False when the bee is gone."""
        stdin = self.proc.stdin
        if stdin is None or stdin.is_closing() or self.proc.returncode is not None:
            return False
        try:
            stdin.write(dumps(message))
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError, RuntimeError):
            return False
        return True

    def signal_group(self, sig: signal.Signals) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    async def terminate(self, grace: float = 2.0) -> int:
        """SIGTERM the bee's group, SIGKILL after ``grace``, and reap it. Idempotent."""
        if self.proc.returncode is None:
            self.signal_group(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.proc.wait(), grace)
        self.signal_group(signal.SIGKILL)
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.kill()
        code = await self.proc.wait()
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        return code
