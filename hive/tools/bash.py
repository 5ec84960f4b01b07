"""``bash``: run a shell command inside a bubblewrap sandbox, read-only by construction.

The sandbox (see :func:`bwrap_argv`):

- the host filesystem bound read-only at ``/`` (the repository and the Python installation included, so
  ``python -c`` and the project's tests run), a fresh ``/dev`` and ``/proc``, and a private, writable tmpfs
  at ``/tmp`` that vanishes with the call; the home directories (``/root``, ``/home``, ``$HOME``), where
  credentials live, are replaced by empty tmpfs; paths the command needs that live under a hidden directory
  (a repository checked out in ``/tmp`` or in a home directory, a pyenv Python) are bound again, read-only;
- every namespace unshared (``--unshare-all``): no network but a private loopback, its own PID namespace,
  so no process outlives the call; no Unix-domain sockets either (:mod:`hive.tools.seccomp`), since socket
  files on the read-only host (``/run/docker.sock``, an ssh-agent) need no write permission to connect to;
  ``--die-with-parent`` and ``--new-session``, and a lifeline to the bee (:func:`lifeline_argv`), so the
  sandbox dies with the bee however the bee dies; all capabilities dropped, and bubblewrap always sets
  ``no_new_privs``, so a setuid binary gains nothing;
- a clean environment built from nothing (:func:`sandbox_env`): no API key, no ``*_KEY``/``*_TOKEN``/
  ``*_SECRET`` variable, no ``LD_PRELOAD`` or other loader and shell start-up variables;
- resource caps (see :func:`limits_argv`), so one command cannot take the machine down: each process may
  allocate :data:`MEMORY_LIMIT` bytes and use as many seconds of CPU as the time limit, the sandbox may hold
  :data:`PROCESS_LIMIT` processes and threads (by ``RLIMIT_NPROC``, which the kernel never applies to root), as
  root its processes together may use :data:`SANDBOX_MEMORY` bytes and hold :data:`PROCESS_LIMIT` processes
  by cgroups made for each command (:mod:`hive.tools.cgroup`, where writable), ``/tmp`` holds
  :data:`TMP_SIZE` bytes and ``/dev/shm`` :data:`SHM_SIZE`, and every other place, ``/dev`` and the hidden
  home directories included, is read-only; the caps are set by util-linux ``prlimit`` inside the sandbox,
  and a result that looks like a cap was hit says which one;
- a time limit after which the whole process group is killed, and an output cap that keeps the head and
  the tail of what the command printed.

Without bubblewrap (or ``prlimit``) the tool refuses, unless ``unsafe`` is set (``--unsafe-bash``): then the
command runs unsandboxed, still with the clean environment, the time limit, the process-group kill and (with
``prlimit``) the memory and CPU caps, and the result says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import re
import shutil
import signal
import sys
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

from hive.providers.base import ToolSpec
from hive.secrets import is_secret_name
from hive.tools.base import ToolResult
from hive.tools.cgroup import JOIN_FAILED, Controller, SandboxGroup, find_cgroup_parents
from hive.tools.common import (
    OUTPUT_CAP,
    ToolError,
    char_boundary,
    check_args,
    decode,
    preview,
    truncation_marker,
)
from hive.tools.seccomp import filter_fd, unix_socket_filter

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
PRLIMIT_HINT = (
    "bash needs `prlimit` (util-linux) to cap the memory, CPU time and processes of each command, and it was "
    "not found. Install util-linux, or start hive with --unsafe-bash to run commands without a sandbox."
)
SANDBOX_TMP = Path("/tmp")
MEMORY_LIMIT = 4 << 30
"""Bytes each process of a command may allocate (``RLIMIT_DATA``: heap and private writable mappings).

A data limit rather than an address-space one (``RLIMIT_AS``): runtimes reserve address space they never
use (V8 reserves guard regions for WebAssembly, so ``node`` fails under a 4 GiB ``RLIMIT_AS``; the JVM
reserves its heap, glibc 64 MiB per thread arena, ASan terabytes of shadow), while the data limit counts
only what a process can actually fill. ``import numpy``, a small project's pytest, ``git log --stat`` and
``java -version`` all run under 512 MiB; 4 GiB leaves room for real test suites and compilers and still
stops a runaway allocation long before it takes the machine's memory from the other bees."""
TMP_SIZE = 512 << 20
"""Bytes the private ``/tmp`` (also ``HOME`` and ``TMPDIR``) can hold, so writing there cannot fill the
machine's RAM: enough for scratch files, a build directory or a checkout of an older revision; with six
bees each running a command at once, at most 3 GiB."""
SHM_SIZE = 64 << 20
"""Bytes the private ``/dev/shm`` can hold: POSIX shared memory and semaphores (``multiprocessing``)."""
PROCESS_LIMIT = 4096
"""Processes and threads the sandbox may hold (``RLIMIT_NPROC``, counted in the sandbox's own user namespace
since Linux 5.14): far above a parallel build or test run, far below the kernel's default of 32,768 pids. The
kernel never applies it to root: there each command's sandbox gets a pids cgroup with this ``pids.max``
(:mod:`hive.tools.cgroup`), where one is writable; without one a fork bomb runs until the time limit and dies
with the sandbox."""
SANDBOX_MEMORY = 4 << 30
"""Bytes a command's processes may use together, its ``/tmp`` and shared memory included: a memory cgroup's
limit, so only as root where one is writable (elsewhere the per-process :data:`MEMORY_LIMIT` is the cap)."""

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


def python_installation(python: Path) -> list[Path]:
    """The ``bin`` and ``lib`` directories of the Python installation ``python`` leads to, or none when it does
    not lead to one: an executable named ``python…`` in a ``bin`` directory whose prefix has ``lib/python3…``.

    For the repository's ``.venv/bin/python``, which the repository controls: a link from there to
    ``~/.aws/credentials`` once had the whole home directory bound into the sandbox (its "installation").
    Binding only ``bin`` and ``lib`` of something that looks like a Python installation keeps a pyenv or uv
    Python under the home directory working and shows nothing else of it.
    """
    real = Path(os.path.realpath(python))
    looks_like_python = real.name.startswith("python") and real.parent.name == "bin"
    if not (looks_like_python and real.is_file() and os.access(real, os.X_OK)):
        return []
    prefix = real.parent.parent
    if not any(path.is_dir() for path in prefix.glob("lib/python3*")):
        return []
    return [prefix / "bin", prefix / "lib"]


def paths_to_keep(repo: Path, hidden: Sequence[Path]) -> list[Path]:
    """Host paths the command needs that :func:`hidden_dirs` would hide, to bind again (read-only): the
    repository, the Python running hive (its venv and installation), and the installation behind the
    repository's own ``.venv`` (a pyenv or uv Python under the home directory, say; see
    :func:`python_installation`)."""
    candidates = [repo, Path(sys.prefix), Path(sys.base_prefix)]
    if Path(sys.executable).exists():
        candidates.append(Path(os.path.realpath(sys.executable)).parent.parent)
    candidates += python_installation(repo / ".venv" / "bin" / "python")
    keep: list[Path] = []
    for path in sorted((candidate.resolve() for candidate in candidates), key=lambda p: len(p.parts)):
        if any(path.is_relative_to(kept) for kept in keep):
            continue
        if any(path.is_relative_to(directory) for directory in hidden):
            keep.append(path)
    return keep


def limits_argv(prlimit: str, cpu_seconds: int, *, processes: int | None = PROCESS_LIMIT) -> list[str]:
    """The ``prlimit`` prefix that caps what ``argv`` after it may use: :data:`MEMORY_LIMIT` of data per
    process, ``cpu_seconds`` of CPU per process and, unless None, ``processes`` processes.

    Soft and hard limits are set together, so the command cannot raise them again (that needs
    ``CAP_SYS_RESOURCE``, which the sandbox drops). Only the CPU limit gets a second of slack: ``SIGXCPU`` at
    the limit, so the shell can say why the command died, ``SIGKILL`` a second later. Without the sandbox's
    user namespace ``RLIMIT_NPROC`` counts every process of the user, a desktop's included, so the unsandboxed
    path leaves it out.
    """
    caps = [f"--data={MEMORY_LIMIT}", f"--cpu={cpu_seconds}:{cpu_seconds + 1}"]
    if processes is not None:
        caps.append(f"--nproc={processes}")
    return [prlimit, *caps, "--"]


_LIFELINE = (
    'exec 3<&0 </dev/null; {{ read -r _ <&3; {kill}; }} >/dev/null 2>&1 & exec 3<&-; exec "$@"'
)


def lifeline_argv(shell: str, argv: Sequence[str], *, sandboxed: bool) -> list[str]:
    """``argv`` behind a watcher that kills it, and everything it started, once standard input reads end of file.

    Standard input is to be the read end of a pipe whose write end only the bee holds (:func:`lifeline`), so it
    reads end of file when the bee dies, however it dies; ``argv`` itself gets ``/dev/null``. bubblewrap's
    ``--die-with-parent`` alone leaves a gap: the sandbox's init sets its parent-death signal only once the
    sandbox is set up and the command started, so a bee killed in between (its coordinator SIGKILLed, say)
    orphans the init, and the command lives on. In the sandbox the watcher kills every process of the sandbox's
    PID namespace, where it is pid 2 (checked, so that ``kill -1`` can never run outside one); unsandboxed, the
    command's process group (it is started in a session of its own). POSIX ``sh`` is enough.
    """
    kill = '[ "$$" = 2 ] && kill -s KILL -- -1' if sandboxed else "kill -s KILL -- -$$"
    return [shell, "-c", _LIFELINE.format(kill=kill), "lifeline", *argv]


@contextlib.contextmanager
def lifeline() -> Iterator[int]:
    """A pipe for :func:`lifeline_argv`, open while the command runs; yields the end that becomes the command's
    standard input. The other end is never inherited (:pep:`446`), so no child of the bee can keep it open."""
    read_end, write_end = os.pipe()
    try:
        yield read_end
    finally:
        os.close(read_end)
        os.close(write_end)


def size_text(size: int) -> str:
    """``4 GiB``, ``512 MiB``: a cap as the model reads it."""
    return f"{size >> 30} GiB" if size % (1 << 30) == 0 else f"{size >> 20} MiB"


def _tmpfs(path: Path | str, size: int | None) -> list[str]:
    return [*(["--size", str(size)] if size is not None else []), "--tmpfs", str(path)]


def bwrap_argv(
    bwrap: str,
    repo: Path,
    argv: Sequence[str],
    *,
    hide: Sequence[Path] = (SANDBOX_TMP,),
    keep: Sequence[Path] = (),
    mask: Sequence[Path] = (),
    drop_caps: bool = True,
    info_fd: int | None = None,
    seccomp_fd: int | None = None,
    sized: bool = True,
) -> list[str]:
    """The bubblewrap command line running ``argv`` in ``repo``: read-only, offline, in its own PID space.

    Of the hidden directories only :data:`SANDBOX_TMP` stays writable (:data:`TMP_SIZE` bytes); the others
    are empty and read-only once ``keep`` is bound into them. ``mask`` directories (hive's runs directory
    inside the repository) are covered last by an empty, read-only tmpfs. With ``info_fd``, bwrap writes the host pid of
    the sandbox's init there as soon as it exists; with ``seccomp_fd``, bwrap loads the filter it holds
(:mod:`hive.tools.seccomp`). ``sized=False`` leaves out ``--size`` for a bubblewrap
    that cannot size a tmpfs (before 0.7, or setuid): its tmpfs may then grow to half the machine's RAM.
    """
    scratch = {SANDBOX_TMP, SANDBOX_TMP.resolve()}
    # bwrap's /dev is a writable tmpfs as large as half the RAM: keep only /dev/shm writable, and bounded.
    mounts = ["--ro-bind", "/", "/", "--dev", "/dev", *_tmpfs("/dev/shm", SHM_SIZE if sized else None)]
    mounts += ["--remount-ro", "/dev", "--proc", "/proc"]
    for path in hide:
        mounts += _tmpfs(path, TMP_SIZE if sized and path in scratch else None)
    for path in keep:
        mounts += ["--ro-bind", str(path), str(path)]
    for path in hide:
        if path not in scratch:
            mounts += ["--remount-ro", str(path)]
    for path in mask:
        mounts += ["--tmpfs", str(path), "--remount-ro", str(path)]
    # As root, bwrap keeps root's capabilities inside unless told otherwise; unprivileged, it has none to drop
    # (and older versions refuse --cap-drop there).
    caps = ["--cap-drop", "ALL"] if drop_caps else []
    info = ["--info-fd", str(info_fd)] if info_fd is not None else []
    seccomp = ["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []
    return [
        bwrap,
        *info,
        *seccomp,
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


_MEMORY_FAILURE = re.compile(
    r"MemoryError|out ?of ?memory|cannot allocate|unable to allocate|failed to allocate|bad_alloc"
    r"|allocation (?:of \d+ bytes )?failed",
    re.IGNORECASE,
)
_PROCESS_FAILURE = re.compile(
    r"fork: (?:retry: )?Resource temporarily unavailable|can't start new thread|cannot fork|pthread_create",
    re.IGNORECASE,
)


def limit_notes(
    output: str,
    exit_code: int | None,
    *,
    sandboxed: bool,
    cpu_seconds: int,
    processes: int = PROCESS_LIMIT,
    memory: int = SANDBOX_MEMORY,
    caps_hit: Collection[Controller] = (),
) -> list[str]:
    """Lines telling the model which resource cap a failed command hit: read from its output, and from
    ``caps_hit``, what the sandbox's cgroups counted (root only).

    Only for a command that failed (a non-zero exit or a time-out), so a test that prints ``MemoryError`` on
    its way to passing gets no note. The ``/tmp`` and process caps exist only in the sandbox.
    """
    if exit_code == 0:
        return []
    notes = []
    if _MEMORY_FAILURE.search(output):
        notes.append(
            f"[each process may allocate at most {size_text(MEMORY_LIMIT)} of memory; "
            "the command seems to have hit that cap]"
        )
    if sandboxed and "No space left on device" in output:
        notes.append(
            f"[/tmp holds at most {size_text(TMP_SIZE)} and everything outside it is read-only; "
            "the command ran out of space]"
        )
    if "memory" in caps_hit:
        notes.append(
            f"[the command's processes together may use at most {size_text(memory)} of memory, /tmp included; "
            "the kernel killed one that went over]"
        )
    if sandboxed and ("pids" in caps_hit or _PROCESS_FAILURE.search(output)):
        notes.append(f"[the sandbox holds at most {processes} processes and threads; the command hit that cap]")
    if exit_code == 128 + signal.SIGXCPU or exit_code == -signal.SIGXCPU or "CPU time limit" in output:
        notes.append(f"[each process may use at most {cpu_seconds} s of CPU time; the command used it up]")
    return notes


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
    caps_hit: frozenset[Controller] = frozenset()
    """The sandbox's cgroup caps the command ran into (root only)."""


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
    pass_fds: Sequence[int] = (),
    stdin: int | None = None,
) -> Outcome:
    """Run ``argv`` with stdout and stderr merged and capped; kill everything it started when it ends, when
    ``limit`` seconds pass, or when the caller is cancelled. The process is always reaped.

    ``stop``, once set, ends the command early (the tools are closing). ``info_pipe`` is the (read, write)
    pair whose write end ``argv`` passes to ``bwrap --info-fd``; ``pass_fds`` are further descriptors the
    command inherits (the caller closes them); ``stdin`` is its standard input (``/dev/null`` by default).
    """
    # Our own pipe rather than asyncio's: asyncio's wait() also waits for its pipes to close, which a
    # background child (unsandboxed) could hold open for ever, and we could not close them ourselves.
    out_read, out_write = os.pipe()
    spawn = asyncio.ensure_future(
        asyncio.create_subprocess_exec(
            *argv,
            cwd=cwd,
            env=dict(env),
            stdin=asyncio.subprocess.DEVNULL if stdin is None else stdin,
            stdout=out_write,
            stderr=out_write,
            start_new_session=True,
            pass_fds=(*(info_pipe[1:] if info_pipe else ()), *pass_fds),
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
        "read-only (use it to run, reproduce and query, never to edit), /tmp is a private scratch directory "
        f"of {size_text(TMP_SIZE)}, each process may allocate {size_text(MEMORY_LIMIT)}, there is no network, "
        "and the command is killed after `timeout` seconds. Output (stdout and stderr together) is capped; the "
        "exit code is reported."
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
        prlimit_path: str = "prlimit",
        env: Mapping[str, str] | None = None,
        processes: int = PROCESS_LIMIT,
        memory: int = SANDBOX_MEMORY,
        exclude: Sequence[Path] = (),
    ) -> None:
        self.repo = repo.resolve()
        self.exclude = [path.resolve() for path in exclude]
        """Directories the sandbox shows empty: hive's runs directory, wherever it is."""
        self.processes = processes
        self.memory = memory
        self.cgroups = find_cgroup_parents()
        """Where each command gets its cgroups (root only, where writable), by controller."""
        self.timeout = timeout
        self.cap = cap
        self.unsafe = unsafe
        self.bwrap = shutil.which(bwrap_path)
        self.prlimit = shutil.which(prlimit_path, path=SAFE_PATH)
        self.sized = True
        """Whether this bubblewrap can size a tmpfs; the first call's probe finds out."""
        self.env = sandbox_env(env, path_prefix=python_dirs(self.repo))
        self.shell = shutil.which("bash", path=SAFE_PATH) or "/bin/sh"
        self._sandbox_problem: str | None = None
        self._probed = False
        self._closing = asyncio.Event()
        self.hidden = hidden_dirs()
        self.keep = paths_to_keep(self.repo, self.hidden)
        self.seccomp = unix_socket_filter()
        """The filter refusing Unix-domain sockets, or None on a machine whose system call numbers we do not know."""

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
            if self.prlimit is not None:
                argv = [*limits_argv(self.prlimit, math.ceil(timeout), processes=None), *argv]
            with lifeline() as fd:
                outcome = await run_capped(
                    lifeline_argv(self.shell, argv, sandboxed=False), cwd=self.repo, env=self.env,
                    limit=timeout, cap=self.cap, stop=self._closing, stdin=fd,
                )
        return self._result(command, outcome, timeout, sandboxed)

    async def _sandbox_usable(self, command: str) -> bool:
        """True to sandbox, False to run unsandboxed (only with ``unsafe``); :class:`ToolError` to refuse."""
        refused = f"ran `{preview(command)}`: refused (no sandbox)"
        if self.bwrap is None or self.prlimit is None:
            if self.unsafe:
                return False
            raise ToolError(f"bash: refused: {INSTALL_HINT if self.bwrap is None else PRLIMIT_HINT}", activity=refused)
        if not self._probed:
            # bwrap may be installed yet unable to make namespaces (a locked-down container): find out once.
            probe = await self._in_sandbox(["true"], limit=15.0, cap=2000)
            if probe.exit_code == JOIN_FAILED and self.cgroups:
                # The cgroups could be made but not joined (a cgroup v2 parent with processes of its own, say):
                # go without them rather than fail every command.
                self.cgroups = {}
                probe = await self._in_sandbox(["true"], limit=15.0, cap=2000)
            if probe.exit_code != 0:
                # A bubblewrap before 0.7 (or a setuid one) refuses --size: sandbox it without the tmpfs caps.
                self.sized = False
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
        limits: dict[Controller, int] = {"pids": self.processes, "memory": self.memory}
        group = SandboxGroup.create(self.cgroups, limits) if self.cgroups else None
        info_pipe = os.pipe()
        seccomp = filter_fd(self.seccomp) if self.seccomp is not None else None
        capped = [*limits_argv(self.prlimit or "prlimit", math.ceil(limit), processes=self.processes), *argv]
        try:
            with lifeline() as fd:
                sandboxed = bwrap_argv(
                    self.bwrap or "bwrap",
                    self.repo,
                    lifeline_argv(self.shell, capped, sandboxed=True),
                    hide=self.hidden,
                    keep=self.keep,
                    mask=self._masked(),
                    drop_caps=os.geteuid() == 0,
                    info_fd=info_pipe[1],
                    seccomp_fd=seccomp,
                    sized=self.sized,
                )
                outcome = await run_capped(
                    group.join(sandboxed) if group is not None else sandboxed,
                    cwd=self.repo,
                    env=self.env,
                    limit=limit,
                    cap=cap,
                    stop=self._closing,
                    info_pipe=info_pipe,
                    stdin=fd,
                    pass_fds=(seccomp,) if seccomp is not None else (),
                )
            return replace(outcome, caps_hit=frozenset(group.hits())) if group is not None else outcome
        finally:
            if seccomp is not None:
                os.close(seccomp)
            if group is not None:
                await group.remove()

    def _masked(self) -> list[Path]:
        """The excluded directories the sandbox would show: not those under a hidden directory (already out of
        sight, and no mount point can be made in its read-only tmpfs) unless bound again with a kept path."""
        return [
            path
            for path in self.exclude
            if path.is_dir()
            and (not any(path.is_relative_to(hidden) for hidden in self.hidden)
                 or any(path.is_relative_to(kept) for kept in self.keep))
        ]

    def _result(self, command: str, outcome: Outcome, timeout: float, sandboxed: bool) -> ToolResult:
        label = f"ran `{preview(command)}`" + ("" if sandboxed else " unsandboxed")
        body = outcome.output if outcome.output else "(no output)"
        if not body.endswith("\n"):
            body += "\n"
        if not sandboxed:
            caps = " and per-process memory and CPU caps" if self.prlimit is not None else ""
            body = (
                "[unsandboxed: the sandbox is not available and --unsafe-bash is set; the command ran with a "
                f"clean environment and a time limit{caps} only]\n" + body
            )
        if outcome.ended == "stopped":
            return ToolResult(
                text=f"{body}[stopped: the tools were closed; the command and its children were killed]",
                ok=False,
                activity=f"{label}: stopped",
            )
        cpu_seconds = math.ceil(timeout)
        found = limit_notes(
            outcome.output,
            outcome.exit_code,
            sandboxed=sandboxed,
            cpu_seconds=cpu_seconds,
            processes=self.processes,
            memory=self.memory,
            caps_hit=outcome.caps_hit,
        )
        notes = "".join(f"\n{note}" for note in found)
        if outcome.exit_code is None:
            return ToolResult(
                text=f"{body}[timed out after {timeout:g} s; the command and its children were killed]{notes}",
                ok=False,
                activity=f"{label}: timed out after {timeout:g} s",
            )
        code = outcome.exit_code
        if code < 0:
            return ToolResult(text=f"{body}[killed by signal {-code}]{notes}", activity=f"{label}: signal {-code}")
        return ToolResult(text=f"{body}[exit code {code}]{notes}", activity=f"{label}: exit {code}")

    async def aclose(self) -> None:
        """Stop every running command, even one still starting, and refuse new ones (the tools are closing)."""
        self._closing.set()
