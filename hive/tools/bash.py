"""``bash``: run a shell command inside a bubblewrap sandbox, read-only by construction.

The sandbox (see :func:`bwrap_argv`):

- the host filesystem bound read-only at ``/`` (the repository and the Python installation included, so
  ``python -c`` and the project's tests run), a fresh ``/dev`` and ``/proc``, and a private, writable tmpfs
  at ``/tmp`` that vanishes with the call; the home directories (``/root``, ``/home``, ``$HOME``), where
  credentials live, are replaced by empty tmpfs; paths the command needs that live under a hidden directory
  (a repository checked out in ``/tmp`` or in a home directory, a pyenv Python) are bound again, read-only;
- every namespace unshared (``--unshare-all``): no network but a private loopback, its own PID namespace,
  so no process outlives the call; ``--die-with-parent`` and ``--new-session``; all capabilities dropped,
  and bubblewrap always sets ``no_new_privs``, so a setuid binary gains nothing;
- a clean environment built from nothing (:func:`sandbox_env`): no API key, no ``*_KEY``/``*_TOKEN``/
  ``*_SECRET`` variable, no ``LD_PRELOAD`` or other loader and shell start-up variables;
- a time limit after which the whole process group is killed, and an output cap that keeps the head and
  the tail of what the command printed.

Without bubblewrap the tool refuses, unless ``unsafe`` is set (``--unsafe-bash``): then the command runs
unsandboxed, still with the clean environment, the time limit and the process-group kill, and the result says
so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Literal

from hive.providers.base import ToolSpec
from hive.tools.base import ToolResult
from hive.tools.common import (
    OUTPUT_CAP,
    ToolError,
    char_boundary,
    check_args,
    decode,
    preview,
    truncation_marker,
)

SAFE_PATH = "/usr/local/bin:/usr/bin:/bin"
MAX_TIMEOUT = 600.0
"""The longest time limit a model may ask for in one call."""
DRAIN_SECONDS = 1.0
"""After the command ends, how long we wait for output still in the pipe."""
INFO_SECONDS = 2.0
"""How long stopping a sandbox waits for bwrap to say which process is the sandbox's init."""
INSTALL_HINT = (
    "bash needs bubblewrap to run commands in a read-only sandbox, and `bwrap` was not found. Install it "
    "(Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install bubblewrap`; "
    "Arch: `pacman -S bubblewrap`), "
    "or start hive with --unsafe-bash to run commands without a sandbox."
)
SANDBOX_TMP = Path("/tmp")

_SECRET_NAME = re.compile(
    r"(?:^|_)(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|PASSPHRASE|CREDENTIALS?)$|API_?KEY|ACCESS_KEY|PRIVATE_KEY",
    re.IGNORECASE,
)
_LOADER_PREFIXES = ("LD_", "DYLD_", "BASH_FUNC_")
_STARTUP_VARIABLES = frozenset(
    {
        "BASH_ENV",
        "ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PROMPT_COMMAND",
        "PS4",
        "IFS",
        "CDPATH",
        "GLOBIGNORE",
        "PYTHONSTARTUP",
        "PERL5OPT",
        "NODE_OPTIONS",
        "GCONV_PATH",
        "GIT_CONFIG_PARAMETERS",
    }
)


def is_secret_name(name: str) -> bool:
    """Whether a variable's name says it holds a credential (``OPENAI_API_KEY``, ``FOO_TOKEN``)."""
    return _SECRET_NAME.search(name) is not None


def is_unsafe_variable(name: str) -> bool:
    """Variables that change what a program loads or runs before the command: never passed to bash."""
    upper = name.upper()
    return upper.startswith(_LOADER_PREFIXES) or upper in _STARTUP_VARIABLES


def python_dirs(repo: Path) -> list[str]:
    """Directories put before :data:`SAFE_PATH` so ``python`` and ``pytest`` work in the sandbox: the
    repository's own ``.venv/bin`` when it has one, then the bin directory of the Python running hive."""
    dirs = [repo / ".venv" / "bin", Path(sys.executable).parent]
    return list(dict.fromkeys(str(path) for path in dirs if path.is_dir()))


def sandbox_env(extra: Mapping[str, str] | None = None, *, path_prefix: Sequence[str] = ()) -> dict[str, str]:
    """The whole environment a command sees, built from nothing: the host's is never inherited.

    ``extra`` (the caller's, never the model's) may add or override variables; secret-looking and loader
    variables are dropped from it all the same.
    """
    env = {
        "PATH": ":".join([*path_prefix, SAFE_PATH]),
        "HOME": str(SANDBOX_TMP),
        "TMPDIR": str(SANDBOX_TMP),
        "LANG": "C.UTF-8",
        # The repository is read-only: keep Python from trying to write __pycache__ into it.
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for name, value in (extra or {}).items():
        if not (is_secret_name(name) or is_unsafe_variable(name)):
            env[name] = value
    return env


def hidden_dirs() -> list[Path]:
    """Host directories the sandbox replaces with empty tmpfs: ``/tmp`` (the command's private scratch space)
    and the home directories, where credentials live (``~/.ssh``, ``~/.aws``, ``~/.netrc``, ``~/.config``)."""
    candidates = [SANDBOX_TMP, Path("/home"), Path("/root")]
    with contextlib.suppress(RuntimeError, KeyError):
        candidates.append(Path.home())
    hidden: list[Path] = []
    for path in candidates:
        real = path.resolve()
        if real.is_dir() and real != Path("/") and real not in hidden:
            hidden.append(real)
    return hidden


def paths_to_keep(repo: Path, hidden: Sequence[Path]) -> list[Path]:
    """Host paths the command needs that :func:`hidden_dirs` would hide, to bind again (read-only): the
    repository, the Python running hive (its venv and installation), and the installation behind the
    repository's own ``.venv`` (a pyenv or uv Python under the home directory, say)."""
    candidates = [repo, Path(sys.prefix), Path(sys.base_prefix)]
    for python in (Path(sys.executable), repo / ".venv" / "bin" / "python"):
        if python.exists():
            candidates.append(Path(os.path.realpath(python)).parent.parent)
    keep: list[Path] = []
    for path in sorted((candidate.resolve() for candidate in candidates), key=lambda p: len(p.parts)):
        if any(path.is_relative_to(kept) for kept in keep):
            continue
        if any(path.is_relative_to(directory) for directory in hidden):
            keep.append(path)
    return keep


def bwrap_argv(
    bwrap: str,
    repo: Path,
    argv: Sequence[str],
    *,
    hide: Sequence[Path] = (SANDBOX_TMP,),
    keep: Sequence[Path] = (),
    drop_caps: bool = True,
    info_fd: int | None = None,
) -> list[str]:
    """The bubblewrap command line running ``argv`` in ``repo``: read-only, offline, in its own PID space.

    With ``info_fd``, bwrap writes the host pid of the sandbox's init there as soon as it exists.
    """
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    for path in hide:
        mounts += ["--tmpfs", str(path)]
    for path in keep:
        mounts += ["--ro-bind", str(path), str(path)]
    # As root, bwrap keeps root's capabilities inside unless told otherwise; unprivileged, it has none to drop
    # (and older versions refuse --cap-drop there).
    caps = ["--cap-drop", "ALL"] if drop_caps else []
    info = ["--info-fd", str(info_fd)] if info_fd is not None else []
    return [
        bwrap,
        *info,
        *mounts,
        "--unshare-all",
        "--die-with-parent",
        "--new-session",
        *caps,
        "--chdir",
        str(repo),
        "--",
        *argv,
    ]


# --------------------------------------------------------------------------- running


@dataclass
class HeadTail:
    """The first and last bytes of a stream, so a long log still shows its beginning and its summary."""

    cap: int
    head: bytearray = field(default_factory=bytearray)
    tail: bytearray = field(default_factory=bytearray)
    total: int = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            del self.tail[: max(0, len(self.tail) - self.cap)]

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            self.add(chunk)

    def text(self) -> str:
        data = bytes(self.head + self.tail)
        if self.total <= self.cap:
            return decode(data)
        head = data[: char_boundary(data, self.cap // 2)]
        # Past the cap, the stream's last (cap - len(head)) bytes all lie in head + tail, after the head part.
        tail = data[len(data) - (self.cap - len(head)) :]
        while tail and (tail[0] & 0xC0) == 0x80:
            tail = tail[1:]
        marker = truncation_marker(len(head) + len(tail), self.total)
        return f"{decode(head)}\n{marker}\n{decode(tail)}"


@dataclass(frozen=True)
class Outcome:
    exit_code: int | None
    """None when the command was killed by the time limit or by a stop request."""
    output: str
    ended: Literal["exited", "timed_out", "stopped"] = "exited"


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    # The command runs in its own session (start_new_session), so its pid is its process group's id.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def _read_pipe(pipe: BinaryIO) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    """Read a pipe's end through the event loop; the returned transport owns ``pipe`` and closes it."""
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    return stream, transport


async def _sandbox_init(pipe: BinaryIO) -> int | None:
    """A pidfd for the sandbox's init, from what ``bwrap --info-fd`` writes (``{"child-pid": N, ...}``)."""
    stream, transport = await _read_pipe(pipe)
    try:
        data = await stream.readuntil(b"}")
        pid = int(json.loads(data)["child-pid"])
        return os.pidfd_open(pid)
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError, KeyError, TypeError, OSError):
        return None  # bwrap died before making a sandbox, or the init is already gone
    finally:
        transport.close()


async def _drain(pipe: BinaryIO, capture: HeadTail) -> None:
    stream, transport = await _read_pipe(pipe)
    try:
        await capture.drain(stream)
    finally:
        transport.close()


@dataclass(eq=False)
class Running:
    """One running command, and what it takes to stop all of it."""

    proc: asyncio.subprocess.Process
    init: asyncio.Task[int | None] | None = None
    """The sandbox's init as a pidfd (killing it ends every process in the sandbox's PID namespace)."""

    async def stop(self) -> None:
        if self.init is not None:
            # bwrap reports its init right after creating it. Wait for that before killing bwrap: an init made
            # while bwrap is still setting up is not yet bound by --die-with-parent and would be orphaned.
            done, _ = await asyncio.wait({self.init}, timeout=INFO_SECONDS)
            if done and (pidfd := self.init.result()) is not None:
                with contextlib.suppress(ProcessLookupError, OSError):
                    signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        _kill_group(self.proc)

    async def release(self) -> None:
        if self.init is None:
            return
        if not self.init.done():
            self.init.cancel()
        pidfd = (await asyncio.gather(self.init, return_exceptions=True))[0]
        if isinstance(pidfd, int):
            os.close(pidfd)


async def run_capped(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limit: float,
    cap: int,
    stop: asyncio.Event | None = None,
    info_pipe: tuple[int, int] | None = None,
) -> Outcome:
    """Run ``argv`` with stdout and stderr merged and capped; kill everything it started when it ends, when
    ``limit`` seconds pass, or when the caller is cancelled. The process is always reaped.

    ``stop``, once set, ends the command early (the tools are closing). ``info_pipe`` is the (read, write)
    pair whose write end ``argv`` passes to ``bwrap --info-fd``.
    """
    # Our own pipe rather than asyncio's: asyncio's wait() also waits for its pipes to close, which a
    # background child (unsandboxed) could hold open for ever, and we could not close them ourselves.
    out_read, out_write = os.pipe()
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=out_write,
            stderr=out_write,
            start_new_session=True,
            pass_fds=info_pipe[1:] if info_pipe else (),
        )
    )
    output = os.fdopen(out_read, "rb", buffering=0)
    info = os.fdopen(info_pipe[0], "rb", buffering=0) if info_pipe else None
    cancelled = False
    try:
        try:
            proc = await asyncio.shield(spawn)
        except asyncio.CancelledError:
            # Cancelled while starting: asyncio would kill only bwrap itself, which can orphan a sandbox in
            # set-up. Finish starting, then stop it completely below, then let the cancellation through.
            cancelled = True
            proc = await spawn
    except BaseException:
        output.close()
        if info:
            info.close()
        raise
    finally:
        os.close(out_write)
        if info_pipe:
            os.close(info_pipe[1])
    running = Running(proc, asyncio.create_task(_sandbox_init(info)) if info else None)
    capture = HeadTail(cap)
    reader = asyncio.create_task(_drain(output, capture))
    ended: Literal["exited", "timed_out", "stopped"] = "exited"
    try:
        if cancelled:
            raise asyncio.CancelledError
        try:
            async with asyncio.timeout(limit):
                if await _stopped_first(proc, stop):
                    ended = "stopped"
        except TimeoutError:
            ended = "timed_out"
    finally:
        # Also after a normal exit: background children (`cmd &`) must not outlive the call.
        await running.stop()
        await proc.wait()
        await running.release()
        # Output still in the pipe is read; a process that escaped the group cannot hold us here.
        _, pending = await asyncio.wait({reader}, timeout=DRAIN_SECONDS)
        for task in pending:
            task.cancel()
        await asyncio.gather(reader, return_exceptions=True)
        output.close()  # normally closed already by its transport; not when the reader never started
        if info:
            info.close()
    return Outcome(proc.returncode if ended == "exited" else None, capture.text(), ended)


async def _stopped_first(proc: asyncio.subprocess.Process, stop: asyncio.Event | None) -> bool:
    """Wait for the process to exit or for ``stop``; True if the stop came first."""
    if stop is None:
        await proc.wait()
        return False
    exited = asyncio.ensure_future(proc.wait())
    stopping = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({exited, stopping}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in (exited, stopping):
            waiter.cancel()
        await asyncio.gather(exited, stopping, return_exceptions=True)
    return not exited.done() or exited.cancelled()


# --------------------------------------------------------------------------- the tool


BASH_SPEC = ToolSpec(
    name="bash",
    description=(
        "Run a shell command (bash -c) in the repository root, inside a sandbox: the whole filesystem is "
        "read-only (use it to run, reproduce and query, never to edit), /tmp is a private scratch directory, "
        "there is no network, and the command is killed after `timeout` seconds. Output (stdout and stderr "
        "together) is capped; the exit code is reported."
    ),
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line, run with bash -c."},
            "timeout": {"type": "number", "minimum": 1, "description": f"Seconds (at most {MAX_TIMEOUT:g})."},
        },
        "required": ["command"],
        "additionalProperties": False,
    },
)


class BashTool:
    """Run commands in the bubblewrap sandbox (with ``unsafe``, without one when bubblewrap is missing)."""

    spec = BASH_SPEC

    def __init__(
        self,
        repo: Path,
        *,
        timeout: float = 60.0,
        cap: int = OUTPUT_CAP,
        unsafe: bool = False,
        bwrap_path: str = "bwrap",
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.repo = repo.resolve()
        self.timeout = timeout
        self.cap = cap
        self.unsafe = unsafe
        self.bwrap = shutil.which(bwrap_path)
        self.env = sandbox_env(env, path_prefix=python_dirs(self.repo))
        self.shell = shutil.which("bash", path=SAFE_PATH) or "/bin/sh"
        self._sandbox_problem: str | None = None
        self._probed = False
        self._closing = asyncio.Event()
        self.hidden = hidden_dirs()
        self.keep = paths_to_keep(self.repo, self.hidden)

    async def run(self, args: dict[str, Any]) -> ToolResult:
        try:
            checked = check_args("bash", self.spec.parameters, args)
            command: str = checked["command"]
            if not command.strip():
                raise ToolError("bash: the command is empty", activity="bash: empty command")
            if self._closing.is_set():
                raise ToolError("bash: the tools are closed", activity=f"ran `{preview(command)}`: refused (closed)")
            timeout = min(float(checked["timeout"] or self.timeout), MAX_TIMEOUT)
            sandboxed = await self._sandbox_usable(command)
        except ToolError as e:
            return e.result()
        argv = [self.shell, "-c", command]
        if sandboxed:
            outcome = await self._in_sandbox(argv, limit=timeout, cap=self.cap)
        else:
            outcome = await run_capped(
                argv, cwd=self.repo, env=self.env, limit=timeout, cap=self.cap, stop=self._closing
            )
        return self._result(command, outcome, timeout, sandboxed)

    async def _sandbox_usable(self, command: str) -> bool:
        """True to sandbox, False to run unsandboxed (only with ``unsafe``); :class:`ToolError` to refuse."""
        refused = f"ran `{preview(command)}`: refused (no sandbox)"
        if self.bwrap is None:
            if self.unsafe:
                return False
            raise ToolError(f"bash: refused: {INSTALL_HINT}", activity=refused)
        if not self._probed:
            # bwrap may be installed yet unable to make namespaces (a locked-down container): find out once.
            probe = await self._in_sandbox(["true"], limit=15.0, cap=2000)
            self._probed = True
            if probe.exit_code != 0:
                self._sandbox_problem = probe.output.strip() or f"bwrap exited with {probe.exit_code}"
        if self._sandbox_problem is None:
            return True
        if self.unsafe:
            return False
        raise ToolError(
            f"bash: refused: bubblewrap is installed but cannot create a sandbox here "
            f"({self._sandbox_problem.splitlines()[0]}); allow unprivileged user namespaces, "
            "or start hive with --unsafe-bash to run commands without a sandbox.",
            activity=refused,
        )

    async def _in_sandbox(self, argv: list[str], *, limit: float, cap: int) -> Outcome:
        info_pipe = os.pipe()
        sandboxed = bwrap_argv(
            self.bwrap or "bwrap",
            self.repo,
            argv,
            hide=self.hidden,
            keep=self.keep,
            drop_caps=os.geteuid() == 0,
            info_fd=info_pipe[1],
        )
        return await run_capped(
            sandboxed, cwd=self.repo, env=self.env, limit=limit, cap=cap, stop=self._closing, info_pipe=info_pipe
        )

    def _result(self, command: str, outcome: Outcome, timeout: float, sandboxed: bool) -> ToolResult:
        label = f"ran `{preview(command)}`" + ("" if sandboxed else " unsandboxed")
        body = outcome.output if outcome.output else "(no output)"
        if not body.endswith("\n"):
            body += "\n"
        if not sandboxed:
            body = (
                "[unsandboxed: bubblewrap is not available and --unsafe-bash is set; the command ran with a "
                "clean environment and a time limit only]\n" + body
            )
        if outcome.ended == "stopped":
            return ToolResult(
                text=f"{body}[stopped: the tools were closed; the command and its children were killed]",
                ok=False,
                activity=f"{label}: stopped",
            )
        if outcome.exit_code is None:
            return ToolResult(
                text=f"{body}[timed out after {timeout:g} s; the command and its children were killed]",
                ok=False,
                activity=f"{label}: timed out after {timeout:g} s",
            )
        code = outcome.exit_code
        if code < 0:
            return ToolResult(text=f"{body}[killed by signal {-code}]", activity=f"{label}: signal {-code}")
        return ToolResult(text=f"{body}[exit code {code}]", activity=f"{label}: exit {code}")

    async def aclose(self) -> None:
        """Stop every running command, even one still starting, and refuse new ones (the tools are closing)."""
        self._closing.set()
