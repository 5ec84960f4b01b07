"""bash in bubblewrap: nothing written outside a private /tmp, no network, no secrets, no escaping process,
and no command that can take the machine's memory, disk or process table.

Each test attacks the sandbox the way a model could, through the tool's one argument, and checks the host
afterwards. They need a working ``bwrap`` (scripts/setup.sh installs it) and skip with the reason when the
machine cannot make a sandbox at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from hive.secrets import is_secret_name
from hive.tools.bash import (
    MEMORY_LIMIT,
    PROCESS_LIMIT,
    TMP_SIZE,
    BashTool,
    limit_notes,
    sandbox_env,
)
from hive.tools.cgroup import JOIN_FAILED, Parent, SandboxGroup, cgroup_parents, find_cgroup_parents
from hive.tools.registry import Toolbox


def _sandbox_problem() -> str | None:
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed; scripts/setup.sh installs it"
    probe = subprocess.run(
        [bwrap, "--ro-bind", "/", "/", "--unshare-all", "--die-with-parent", "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    return None if probe.returncode == 0 else f"bwrap cannot create a sandbox here: {probe.stderr.strip()}"


SANDBOX_PROBLEM = _sandbox_problem()
pytestmark = pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=SANDBOX_PROBLEM or "")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "data.txt").write_text("original\n")
    (root / "check.py").write_text("import sys\nprint('args', sys.argv[1:])\n")
    return root.resolve()


@pytest.fixture
async def bash(repo: Path) -> AsyncIterator[BashTool]:
    tool = BashTool(repo, timeout=30)
    yield tool
    await tool.aclose()


def _exists(path: str) -> bool:
    return os.path.exists(path)


def _marker() -> str:
    return f"hive-sandbox-{uuid.uuid4().hex}"


def _processes_with(argument: str) -> list[int]:
    """Host pids whose command line contains ``argument``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if argument.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


async def _until_gone(argument: str) -> list[int]:
    """Poll until no process carries ``argument`` (SIGKILL delivery is asynchronous); the leftovers if any."""
    for _ in range(100):
        alive = _processes_with(argument)
        if not alive:
            return []
        await asyncio.sleep(0.05)
    return _processes_with(argument)


# --------------------------------------------------------------------------- writes


async def test_runs_in_the_repository_and_reports_the_exit_code(bash: BashTool, repo: Path) -> None:
    result = await bash.run({"command": "pwd; cat data.txt; exit 3"})
    assert result.ok
    assert result.text == f"{repo}\noriginal\n[exit code 3]"
    assert result.activity == "ran `pwd; cat data.txt; exit 3`: exit 3"


async def test_writing_into_the_repository_fails(bash: BashTool, repo: Path) -> None:
    result = await bash.run({"command": "echo changed > data.txt; touch new.txt; mkdir newdir; rm -f check.py"})
    assert "Read-only file system" in result.text
    assert (repo / "data.txt").read_text() == "original\n"
    assert not (repo / "new.txt").exists() and not (repo / "newdir").exists()
    assert (repo / "check.py").exists()


async def test_writing_via_python_fails(bash: BashTool, repo: Path) -> None:
    target = repo / "from_python.txt"
    result = await bash.run({"command": f"python -c \"open({str(target)!r}, 'w').write('x')\""})
    assert "Read-only file system" in result.text
    assert result.text.endswith("[exit code 1]")
    assert not target.exists()


async def test_python_runs_inside(bash: BashTool) -> None:
    result = await bash.run({"command": "python check.py one two && python -c 'import sys; print(sys.prefix)'"})
    assert result.text.startswith("args ['one', 'two']\n")
    assert result.text.endswith("[exit code 0]")


async def test_writing_to_the_host_home_fails(bash: BashTool) -> None:
    home = Path.home()
    name = _marker()
    result = await bash.run({"command": f"echo x > {home}/{name}; echo x > ~/{name} && echo sandbox-home=$HOME"})
    assert "sandbox-home=/tmp" in result.text  # $HOME is the private /tmp, not the host's home
    assert not (home / name).exists()


async def test_tmp_is_private_to_the_call(bash: BashTool) -> None:
    name = _marker()
    result = await bash.run({"command": f"echo inside > /tmp/{name} && cat /tmp/{name}"})
    assert result.text == "inside\n[exit code 0]"
    assert not (Path("/tmp") / name).exists()
    again = await bash.run({"command": f"ls /tmp/{name}"})
    assert "No such file or directory" in again.text


async def test_other_host_directories_are_read_only(bash: BashTool) -> None:
    name = _marker()
    result = await bash.run({"command": f"touch /var/tmp/{name} /etc/{name} /dev/{name} /dev/shm/ok 2>&1; echo done"})
    assert result.text.count("Read-only file system") == 3  # /dev is read-only too; only /dev/shm is writable
    assert not _exists(f"/var/tmp/{name}") and not _exists(f"/etc/{name}")


async def test_home_directories_are_hidden(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = very-secret\n")
    monkeypatch.setenv("HOME", str(home))
    tool = BashTool(repo)
    try:
        result = await tool.run({"command": f"cat {home}/.aws/credentials; cat data.txt; ls -A /root"})
    finally:
        await tool.aclose()
    assert "very-secret" not in result.text
    assert "No such file or directory" in result.text
    assert "\noriginal\n" in result.text  # the repository, under the hidden /tmp, is bound again
    # /root shows nothing but the way to a Python installation the sandbox needs (a pyenv one, say).
    in_root = result.text.split("original\n", 1)[1].splitlines()[:-1]
    needed = {path.relative_to("/root").parts[0] for path in tool.keep if path.is_relative_to("/root")}
    assert set(in_root) == needed


async def test_a_venv_link_out_of_the_repository_binds_only_a_python_installation(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The repository controls .venv/bin/python. Linked to a credentials file, it once had the directory two levels
    # up (here the home directory) bound into the sandbox as "the installation behind the repository's .venv".
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = very-secret\n")
    monkeypatch.setenv("HOME", str(home))
    (repo / ".venv" / "bin").mkdir(parents=True)
    (repo / ".venv" / "bin" / "python").symlink_to(home / ".aws" / "credentials")
    tool = BashTool(repo)
    try:
        result = await tool.run({"command": f"cat {home}/.aws/credentials"})
    finally:
        await tool.aclose()
    assert "very-secret" not in result.text and "No such file or directory" in result.text
    assert not any(home.is_relative_to(kept) or kept.is_relative_to(home) for kept in tool.keep)

    # A real-looking installation under the home directory (pyenv, uv) gets its bin and lib, and nothing else.
    prefix = home / ".pyenv" / "versions" / "3.99.0"
    (prefix / "bin").mkdir(parents=True)
    (prefix / "bin" / "python3.99").write_text("#!/bin/sh\necho fake python\n")
    (prefix / "bin" / "python3.99").chmod(0o755)
    (prefix / "lib" / "python3.99").mkdir(parents=True)
    (prefix / "lib" / "python3.99" / "os.py").write_text("# the standard library\n")
    (prefix / "notes.txt").write_text("not part of the installation\n")
    (repo / ".venv" / "bin" / "python").unlink()
    (repo / ".venv" / "bin" / "python").symlink_to(prefix / "bin" / "python3.99")
    tool = BashTool(repo)
    try:
        command = f"cat {prefix}/lib/python3.99/os.py {prefix}/notes.txt {home}/.aws/credentials"
        result = await tool.run({"command": command})
    finally:
        await tool.aclose()
    assert "# the standard library" in result.text
    assert "not part of the installation" not in result.text and "very-secret" not in result.text


async def test_hidden_home_directories_are_read_only(bash: BashTool) -> None:
    result = await bash.run({"command": "touch /root/x 2>&1; mkdir /home/x 2>&1; echo done"})
    assert result.text.count("Read-only file system") == 2


async def test_hive_s_runs_directory_inside_the_repository_is_empty_and_read_only(repo: Path) -> None:
    runs = repo / "runs"
    (runs / "20260101-000000-abcd").mkdir(parents=True)
    (runs / "20260101-000000-abcd" / "board.jsonl").write_text('{"text": "withheld from this bee"}\n')
    tool = Toolbox(repo, ["bash"], exclude=[runs])
    try:
        result = await tool.call(
            "bash", {"command": "ls -A runs; grep -r withheld . ; touch runs/x 2>&1; cat data.txt"}
        )
    finally:
        await tool.aclose()
    assert "withheld" not in result.text and "20260101" not in result.text
    assert "Read-only file system" in result.text and "original" in result.text
    assert (runs / "20260101-000000-abcd" / "board.jsonl").exists() and not (runs / "x").exists()


@pytest.fixture
def runs_outside() -> Iterator[Path]:
    """hive's runs directory outside the repository, in a place the sandbox shows (/tmp is hidden anyway)."""
    with tempfile.TemporaryDirectory(dir="/var/tmp") as parent:
        runs = Path(parent).resolve() / "runs"
        (runs / "20260101-000000-abcd").mkdir(parents=True)
        (runs / "20260101-000000-abcd" / "board.jsonl").write_text('{"text": "withheld from this bee"}\n')
        yield runs


async def test_hive_s_runs_directory_elsewhere_on_the_machine_is_empty_too(repo: Path, runs_outside: Path) -> None:
    # `hive start --repo project` run from the project's parent: ./runs is outside the repository, out of the
    # file tools' reach but not of bash, which sees the whole host read-only.
    command = {"command": f"cat {runs_outside}/*/board.jsonl; ls -A {runs_outside} | wc -l"}
    plain, masked = Toolbox(repo, ["bash"]), Toolbox(repo, ["bash"], exclude=[runs_outside])
    try:
        seen, hidden = await plain.call("bash", command), await masked.call("bash", command)
    finally:
        await plain.aclose()
        await masked.aclose()
    assert "withheld from this bee" in seen.text
    assert "withheld" not in hidden.text and hidden.text.startswith(f"cat: '{runs_outside}/*/board.jsonl'")
    assert "\n0\n" in hidden.text


# --------------------------------------------------------------------------- resources


async def test_the_caps_are_set_and_cannot_be_raised(bash: BashTool) -> None:
    command = (
        "grep -E '^Max (cpu time|data size|processes) ' /proc/self/limits; "
        "df -B1 --output=size /tmp /dev/shm | tail -n +2; ulimit -d unlimited"
    )
    result = await bash.run({"command": command, "timeout": 7})
    lines = [line.split() for line in result.text.splitlines()]
    assert lines[0][3:5] == ["7", "8"]  # CPU seconds: SIGXCPU at the time limit, SIGKILL a second later
    assert lines[1][3:5] == [str(MEMORY_LIMIT)] * 2
    assert lines[2][2:4] == [str(PROCESS_LIMIT)] * 2
    assert lines[3] == [str(TMP_SIZE)]
    assert "cannot modify limit: Operation not permitted" in result.text
    assert result.text.endswith("[exit code 1]")


async def test_allocating_more_than_the_memory_cap_fails_and_the_tool_keeps_working(bash: BashTool) -> None:
    at_once = await bash.run({"command": f"python -c 'bytearray({MEMORY_LIMIT + (1 << 20)})'"})
    assert "MemoryError" in at_once.text
    assert at_once.text.endswith(
        "[exit code 1]\n[each process may allocate at most 4 GiB of memory; the command seems to have hit that cap]"
    )
    # Piece by piece: private mappings count as they are made, before a page is touched, so this uses no RAM.
    grow = "import mmap; [mmap.mmap(-1, 256 << 20, flags=mmap.MAP_PRIVATE) for _ in range(40)]; print('ALL MAPPED')"
    piecemeal = await bash.run({"command": f'python -c "{grow}"'})
    assert "Cannot allocate memory" in piecemeal.text and "ALL MAPPED" not in piecemeal.text
    assert "[each process may allocate at most 4 GiB" in piecemeal.text
    after = await bash.run({"command": "python -c 'print(len(bytearray(64 << 20)))'"})
    assert after.text == f"{64 << 20}\n[exit code 0]"


async def test_filling_tmp_fails_with_no_space_and_the_host_keeps_its_space(bash: BashTool) -> None:
    name = _marker()
    mib = (TMP_SIZE >> 20) + 16
    result = await bash.run({"command": f"dd if=/dev/zero of=/tmp/{name} bs=1M count={mib} status=none"})
    assert "No space left on device" in result.text
    assert result.text.endswith(
        "[exit code 1]\n"
        "[/tmp holds at most 512 MiB and everything outside it is read-only; the command ran out of space]"
    )
    assert not (Path("/tmp") / name).exists()
    shm = await bash.run({"command": "head -c 100M /dev/zero > /dev/shm/big"})
    assert "No space left on device" in shm.text
    again = await bash.run({"command": f"head -c {mib - 32}M /dev/zero > /tmp/{name} && echo written"})
    assert again.text == "written\n[exit code 0]"  # the next call has an empty /tmp of its own


@pytest.mark.slow
async def test_a_fork_bomb_returns_at_the_time_limit_and_leaves_nothing_behind(bash: BashTool) -> None:
    name = _marker()
    # Every forked shell keeps the command line that carries the marker, so the host can count survivors.
    # The process cap binds unprivileged users (RLIMIT_NPROC) and root with a pids cgroup. Where it cannot
    # (root without one) the bomb stops itself after nine generations (about 1,000 shells): enough to show
    # a large tree is killed at the limit, without loading the machine the rest of the suite runs on.
    capped = os.geteuid() != 0 or "pids" in bash.cgroups
    bomb = "bomb() { bomb | bomb & }; bomb" if capped else (
        "bomb() { [ $1 -gt 0 ] && { bomb $(($1-1)) | bomb $(($1-1)) & }; sleep 60; }; bomb 9")
    result = await bash.run({"command": f": {name}; {bomb}; sleep 60", "timeout": 3})
    assert not result.ok
    assert "[timed out after 3 s; the command and its children were killed]" in result.text
    if capped:
        assert f"[the sandbox holds at most {PROCESS_LIMIT} processes" in result.text
    assert await _until_gone(name) == []
    after = await bash.run({"command": "echo alive"})
    assert after.text == "alive\n[exit code 0]"


async def test_the_process_cap_binds_root_too(repo: Path) -> None:
    """Unprivileged, RLIMIT_NPROC caps the sandbox; as root (which the kernel exempts from it) a pids
    cgroup per command does, and is removed when the command ends."""
    if os.geteuid() == 0 and "pids" not in find_cgroup_parents():
        pytest.skip("as root, the process cap needs a writable pids cgroup, and this machine has none")
    tool = BashTool(repo, timeout=30, processes=40)
    try:
        result = await tool.run({"command": "for i in $(seq 100); do sleep 5 & done; wait", "timeout": 20})
        assert "Resource temporarily unavailable" in result.text, result.text
        assert "[the sandbox holds at most 40 processes and threads; the command hit that cap]" in result.text
        after = await tool.run({"command": "echo alive"})
        assert after.text == "alive\n[exit code 0]"
    finally:
        await tool.aclose()
    for parent in tool.cgroups.values():
        assert not list(parent.path.glob(f"hive-{os.getpid()}-*"))


async def test_as_root_the_sandbox_s_processes_share_one_memory_cap(repo: Path) -> None:
    """Each process stays under its own data limit, but together (here one process and the private /tmp)
    they go over the memory cgroup's limit, and the kernel kills one."""
    if os.geteuid() != 0 or "memory" not in find_cgroup_parents():
        pytest.skip("the sandbox-wide memory cap is a memory cgroup, made only as root where one is writable")
    tool = BashTool(repo, timeout=30, memory=96 << 20)
    try:
        fits = await tool.run({"command": "python3 -c 'b = bytearray(40 << 20); print(len(b))'"})
        assert fits.text == f"{40 << 20}\n[exit code 0]"
        command = "head -c 60M /dev/zero > /tmp/fill && python3 -c 'b = bytearray(60 << 20); print(len(b))'"
        over = await tool.run({"command": command})
        assert "[the command's processes together may use at most 96 MiB of memory, /tmp included;" in over.text
        assert f"{60 << 20}" not in over.text
    finally:
        await tool.aclose()
    for parent in tool.cgroups.values():
        assert not list(parent.path.glob(f"hive-{os.getpid()}-*"))


async def test_cgroups_that_cannot_be_joined_are_dropped_not_fatal(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not find_cgroup_parents():
        pytest.skip("needs root and a writable cgroup hierarchy to make the cgroups in")
    # Made for real, but the shell cannot join them, as under a cgroup v2 parent with processes of its own.
    monkeypatch.setattr(SandboxGroup, "join", lambda self, argv: ["/bin/sh", "-c", f"exit {JOIN_FAILED}"])
    tool = BashTool(repo, timeout=30)
    try:
        result = await tool.run({"command": "echo still runs"})
        assert result.text == "still runs\n[exit code 0]"
        assert tool.cgroups == {}
    finally:
        await tool.aclose()


async def test_cgroups_left_by_a_killed_bee_are_swept(repo: Path) -> None:
    parents = find_cgroup_parents()
    if not parents:
        pytest.skip("needs root and a writable cgroup hierarchy")
    dead = await asyncio.create_subprocess_exec("true")  # a pid whose process is gone, like a killed bee's
    await dead.wait()
    stale = [p.path / f"hive-{dead.pid}-1" for p in parents.values()]
    ours = [p.path / f"hive-{os.getpid()}-999999" for p in parents.values()]
    for path in {*stale, *ours}:
        path.mkdir()
    # What a bee killed while bubblewrap set its sandbox up leaves in its cgroup: a process nobody will end.
    orphan = await asyncio.create_subprocess_exec("sleep", "300")
    for path in stale:
        (path / "cgroup.procs").write_text(str(orphan.pid))
    tool = BashTool(repo, timeout=30)
    try:
        assert (await tool.run({"command": "true"})).ok
        assert await asyncio.wait_for(orphan.wait(), 10) == -signal.SIGKILL
        assert (await tool.run({"command": "true"})).ok  # the next sweep finds the cgroups empty
        assert not any(path.exists() for path in stale)
        assert all(path.exists() for path in ours)  # a live hive's cgroup is its own to remove
    finally:
        with contextlib.suppress(ProcessLookupError):
            orphan.kill()
        await orphan.wait()
        await tool.aclose()
        for path in {*stale, *ours}:
            with contextlib.suppress(FileNotFoundError):
                path.rmdir()


def test_cgroups_are_found_in_v1_and_v2_hierarchies(tmp_path: Path) -> None:
    pids = "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
    memory = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    assert cgroup_parents(pids + memory, "8:pids:/\n4:memory:/jobs/7\n0::/\n") == {
        "pids": Parent(Path("/sys/fs/cgroup/pids"), v2=False),
        "memory": Parent(Path("/sys/fs/cgroup/memory/jobs/7"), v2=False),
    }
    nested = "39 31 0:36 /ci /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
    assert cgroup_parents(nested, "8:pids:/ci/job-7\n") == {"pids": Parent(Path("/sys/fs/cgroup/pids/job-7"), False)}
    assert cgroup_parents(pids, "4:memory:/\n") == {}  # hive is in no cgroup of that hierarchy
    (tmp_path / "hive.service").mkdir()
    v2 = f"30 23 0:26 / {tmp_path} rw - cgroup2 cgroup2 rw\n"
    (tmp_path / "hive.service" / "cgroup.subtree_control").write_text("cpu io\n")
    assert cgroup_parents(v2, "0::/hive.service\n") == {}  # neither handed to children
    (tmp_path / "hive.service" / "cgroup.subtree_control").write_text("cpu memory pids\n")
    both = Parent(tmp_path / "hive.service", v2=True)
    assert cgroup_parents(v2, "0::/hive.service\n") == {"pids": both, "memory": both}
    assert cgroup_parents(pids + v2, "8:pids:/\n0::/hive.service\n") == {
        "pids": Parent(Path("/sys/fs/cgroup/pids"), v2=False),  # a v1 hierarchy first
        "memory": both,
    }


def test_limit_notes_name_the_cap_a_failed_command_hit() -> None:
    def notes(output: str, code: int | None, *, sandboxed: bool = True) -> list[str]:
        return limit_notes(output, code, sandboxed=sandboxed, cpu_seconds=60)

    assert notes("MemoryError\nNo space left on device", 0) == []  # a command that passed needs no note
    assert len(notes("thread 'main' memory allocation of 8589934592 bytes failed", 134)) == 1
    assert len(notes("std::bad_alloc", None)) == 1
    assert notes("OSError: [Errno 28] No space left on device", 1)[0].startswith("[/tmp holds at most 512 MiB")
    assert notes("No space left on device", 1, sandboxed=False) == []  # unsandboxed, /tmp is the host's
    assert notes("bash: fork: retry: Resource temporarily unavailable", None)[0].startswith(
        f"[the sandbox holds at most {PROCESS_LIMIT} processes"
    )
    assert notes("", 128 + signal.SIGXCPU) == [
        "[each process may use at most 60 s of CPU time; the command used it up]"
    ]
    assert notes("AssertionError: 1 != 2", 1) == []


# --------------------------------------------------------------------------- privileges


async def test_no_capabilities_and_no_new_privileges(bash: BashTool) -> None:
    result = await bash.run({"command": "id -u; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status"})
    lines = result.text.splitlines()
    assert lines[0] == str(os.geteuid())  # no uid change, and (as root) no root powers either:
    assert "CapEff:\t0000000000000000" in lines and "CapPrm:\t0000000000000000" in lines
    assert "NoNewPrivs:\t1" in lines


async def test_setuid_binaries_and_remounts_cannot_make_the_repository_writable(bash: BashTool, repo: Path) -> None:
    su = shutil.which("su")
    attempts = [
        f"mount -o remount,rw {repo} && touch {repo}/via-mount",
        f"mount -o remount,rw / && touch {repo}/via-mount",
    ]
    if su:
        # With no_new_privs the setuid bit is ignored; even as root, the mount stays read-only.
        attempts.append(f"{su} root -c 'touch {repo}/via-su'")
    result = await bash.run({"command": "; ".join(attempts) + "; true"})
    assert result.text.endswith("[exit code 0]")
    assert not (repo / "via-mount").exists() and not (repo / "via-su").exists()


# --------------------------------------------------------------------------- network


async def test_no_network_to_the_host(bash: BashTool) -> None:
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        server.setblocking(False)
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('CONNECTED')"
        result = await bash.run({"command": f'python -c "{probe}"'})
        assert "CONNECTED" not in result.text
        assert "ConnectionRefusedError" in result.text  # a private loopback with nobody listening
        with pytest.raises(BlockingIOError):
            server.accept()


async def test_no_unix_socket_to_the_host(bash: BashTool, repo: Path) -> None:
    """A socket file on the read-only host (docker.sock, an ssh-agent) needs no write permission to connect
    to; the sandbox refuses Unix-domain sockets altogether."""
    path = repo / "host.sock"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        server.listen()
        server.setblocking(False)
        probe = f"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{path}'); print('CONNECTED')"
        result = await bash.run({"command": f'python -c "{probe}"; ls -l {path}'})
        assert "CONNECTED" not in result.text
        assert "Address family not supported" in result.text, result.text
        assert "host.sock" in result.text  # the file was there to connect to
        with pytest.raises(BlockingIOError):
            server.accept()
    # Everything else still works: the commands people run do not need one.
    ok = await bash.run({"command": "python -c \"import socket; socket.socket(socket.AF_INET); print('inet ok')\""})
    assert "inet ok" in ok.text


async def test_no_route_outside(bash: BashTool) -> None:
    result = await bash.run({"command": "python -c \"import socket; socket.create_connection(('1.1.1.1', 53), 3)\""})
    assert "OSError" in result.text or "unreachable" in result.text.lower()
    assert result.text.endswith("[exit code 1]")


# --------------------------------------------------------------------------- environment


async def test_secrets_and_loader_variables_never_reach_the_command(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    monkeypatch.setenv("FOO_TOKEN", "foo-token-value")
    monkeypatch.setenv("DB_PASSWORD", "hunter2")
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent/libevil.so")
    monkeypatch.setenv("BASH_ENV", "/nonexistent/evil.sh")
    extra = {"VISIBLE_SETTING": "yes", "GITHUB_TOKEN": "ghp-secret", "LD_LIBRARY_PATH": "/evil", "AWS_KEY": "k"}
    toolbox = Toolbox(repo, ["bash"], env=extra)
    try:
        result = await toolbox.call("bash", {"command": "env; cat /proc/self/environ | tr '\\0' '\\n'"})
    finally:
        await toolbox.aclose()
    assert "VISIBLE_SETTING=yes" in result.text
    for leaked in (
        "sk-test-secret",
        "sk-ant-test-secret",
        "foo-token-value",
        "hunter2",
        "ghp-secret",
        "LD_PRELOAD",
        "LD_LIBRARY_PATH",
        "libevil",
        "BASH_ENV",
        "AWS_KEY",
    ):
        assert leaked not in result.text
    names = {line.split("=", 1)[0] for line in result.text.splitlines() if "=" in line}
    assert {"PATH", "HOME", "LANG"} <= names
    assert "HOME=/tmp" in result.text
    assert any(
        line.startswith("PATH=") and line.endswith(":/usr/local/bin:/usr/bin:/bin") for line in result.text.splitlines()
    )


def test_secret_names() -> None:
    for name in (
        "OPENAI_API_KEY",
        "FOO_TOKEN",
        "MY_SECRET",
        "KEY",
        "github_token",
        "AWS_ACCESS_KEY_ID",
        "DB_PASSWORD",
        "SSH_PRIVATE_KEY_PATH",
        "GOOGLE_APPLICATION_CREDENTIALS",
    ):
        assert is_secret_name(name), name
    for name in ("PATH", "HOME", "KEYBOARD", "TOKENIZERS_PARALLELISM", "MONKEY_MODE"):
        assert not is_secret_name(name), name


def test_sandbox_env_is_built_from_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOMETHING_FROM_HOST", "1")
    env = sandbox_env({"EXTRA": "1", "LD_PRELOAD": "x", "PYTHONSTARTUP": "x", "NPM_TOKEN": "x"})
    assert env == {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "EXTRA": "1",
    }


# --------------------------------------------------------------------------- processes


async def test_background_processes_do_not_outlive_the_call(bash: BashTool) -> None:
    first, second = _marker(), _marker()
    # The marker rides in the inner shell's argv ($0), so the host can find the process by it; `; :` keeps that
    # shell alive (bash execs a lone command, and the marker would go with it).
    command = (
        f"bash -c 'sleep 300; :' {first} & setsid nohup bash -c 'sleep 300; :' {second} >/dev/null 2>&1 & "
        f"sleep 0.2; pgrep -f {first} >/dev/null && pgrep -f {second} >/dev/null && echo started"
    )
    result = await bash.run({"command": command})
    assert result.text == "started\n[exit code 0]"
    assert await _until_gone(first) == []
    assert await _until_gone(second) == []


async def test_timeout_kills_the_whole_tree(bash: BashTool) -> None:
    child, grandchild = _marker(), _marker()
    command = f"bash -c 'bash -c \"sleep 300; :\" {grandchild} & sleep 300' {child} & echo waiting; wait"
    result = await bash.run({"command": command, "timeout": 1})
    assert not result.ok
    assert result.text == "waiting\n[timed out after 1 s; the command and its children were killed]"
    assert result.activity == f"ran `{command[:59]}…`: timed out after 1 s"
    assert await _until_gone(child) == []
    assert await _until_gone(grandchild) == []


async def test_cancelling_the_call_kills_the_command(bash: BashTool) -> None:
    name = _marker()
    task = asyncio.create_task(bash.run({"command": f"bash -c 'sleep 300; :' {name}"}))
    for _ in range(500):
        if _processes_with(name):
            break
        await asyncio.sleep(0.02)
    assert _processes_with(name), "the command never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until_gone(name) == []


async def test_aclose_kills_running_commands(repo: Path) -> None:
    tool = BashTool(repo, timeout=60)
    name = _marker()
    task = asyncio.create_task(tool.run({"command": f"bash -c 'sleep 300; :' {name}"}))
    for _ in range(500):
        if _processes_with(name):
            break
        await asyncio.sleep(0.02)
    assert _processes_with(name), "the command never started"
    await tool.aclose()
    result = await task
    assert not result.ok
    assert result.text.endswith("[stopped: the tools were closed; the command and its children were killed]")
    assert await _until_gone(name) == []
    after = await tool.run({"command": "true"})
    assert not after.ok and after.text == "bash: the tools are closed"


@pytest.mark.parametrize("ticks", [0, 1, 2, 5, 20])
async def test_aclose_while_a_command_is_starting_leaves_nothing_behind(repo: Path, ticks: int) -> None:
    tool = BashTool(repo, timeout=60)
    await tool.run({"command": "true"})  # the one-time sandbox probe, out of the way
    name = _marker()
    task = asyncio.create_task(tool.run({"command": f"bash -c 'sleep 300; :' {name}"}))
    for _ in range(ticks):
        await asyncio.sleep(0)
    await tool.aclose()
    result = await task
    assert not result.ok
    assert "tools are closed" in result.text or "[stopped: the tools were closed" in result.text
    assert await _until_gone(name) == []


async def test_output_is_capped_keeping_head_and_tail(repo: Path) -> None:
    tool = BashTool(repo, cap=1000)
    command = "echo START; python -c \"print('x' * 200_000)\"; echo END"
    result = await tool.run({"command": command})
    total = len("START\n") + 200_001 + len("END\n")
    assert result.text.startswith("START\nxxx")
    assert f"\n[truncated: showing 1000 of {total} bytes]\n" in result.text
    assert result.text.endswith("xxx\nEND\n[exit code 0]")
    assert len(result.text) < 1200


async def test_stderr_is_merged_and_non_utf8_output_is_replaced(bash: BashTool) -> None:
    result = await bash.run({"command": "echo out; echo err >&2; printf 'caf\\351\\n'"})
    assert result.text == "out\nerr\ncaf\ufffd\n[exit code 0]"


async def test_bad_arguments_are_error_results(bash: BashTool) -> None:
    assert not (await bash.run({})).ok
    assert not (await bash.run({"command": "   "})).ok
    assert not (await bash.run({"command": "true", "timeout": "soon"})).ok
    assert not (await bash.run({"command": ["ls"]})).ok


# --------------------------------------------------------------------------- without bubblewrap


async def test_a_bubblewrap_that_cannot_size_a_tmpfs_still_sandboxes(repo: Path, tmp_path: Path) -> None:
    # bubblewrap before 0.7 (Ubuntu 22.04 ships 0.6) and setuid ones refuse --size: sandbox without it.
    old_bwrap = tmp_path / "old-bwrap"
    old_bwrap.write_text(
        "#!/bin/sh\n"
        'for arg in "$@"; do [ "$arg" = --size ] && { echo "bwrap: Unknown option --size" >&2; exit 1; }; done\n'
        f'exec {shutil.which("bwrap")} "$@"\n'
    )
    old_bwrap.chmod(0o755)
    tool = BashTool(repo, bwrap_path=str(old_bwrap))
    try:
        result = await tool.run({"command": "touch /tmp/ok /dev/shm/ok && echo x > data.txt"})
    finally:
        await tool.aclose()
    assert result.text.endswith("Read-only file system\n[exit code 1]")
    assert not tool.sized
    assert (repo / "data.txt").read_text() == "original\n"


async def test_missing_prlimit_refuses_unless_unsafe(repo: Path) -> None:
    name = _marker()
    tool = BashTool(repo, prlimit_path="/nonexistent/prlimit")
    result = await tool.run({"command": f"touch /tmp/{name}"})
    assert not result.ok
    assert "util-linux" in result.text and "--unsafe-bash" in result.text
    unsafe = BashTool(repo, prlimit_path="/nonexistent/prlimit", unsafe=True)
    try:
        ran = await unsafe.run({"command": "grep '^Max data size' /proc/self/limits"})
    finally:
        await unsafe.aclose()
    assert ran.text.startswith("[unsandboxed: the sandbox is not available and --unsafe-bash is set; the command ran")
    assert "a time limit only]" in ran.text
    assert str(MEMORY_LIMIT) not in ran.text


async def test_missing_bubblewrap_refuses_with_the_install_command(repo: Path) -> None:
    toolbox = Toolbox(repo, ["bash"], bwrap_path="/nonexistent/bwrap")
    name = _marker()
    result = await toolbox.call("bash", {"command": f"touch /tmp/{name}"})
    assert not result.ok
    assert "apt-get install bubblewrap" in result.text and "--unsafe-bash" in result.text
    assert result.activity == f"ran `touch /tmp/{name}`: refused (no sandbox)"
    assert not (Path("/tmp") / name).exists()  # nothing ran


async def test_unsafe_bash_runs_unsandboxed_with_clean_env_and_time_limit(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    monkeypatch.setenv("FOO_TOKEN", "foo-token-value")
    toolbox = Toolbox(repo, ["bash"], unsafe_bash=True, bwrap_path="/nonexistent/bwrap")
    try:
        result = await toolbox.call("bash", {"command": "env; pwd"})
        assert result.ok
        assert result.text.startswith("[unsandboxed:")
        assert "sk-test-secret" not in result.text and "foo-token-value" not in result.text
        assert f"\n{repo}\n[exit code 0]" in result.text
        assert result.activity == "ran `env; pwd` unsandboxed: exit 0"
        limits = await toolbox.call("bash", {"command": "grep -E '^Max (data size|processes) ' /proc/self/limits"})
        assert "per-process memory and CPU caps only]" in limits.text
        assert f"Max data size             {MEMORY_LIMIT}" in limits.text
        assert f"{PROCESS_LIMIT}" not in limits.text  # unsandboxed, RLIMIT_NPROC would count the user's others
        name = _marker()
        slow = await toolbox.call("bash", {
            "command": f"bash -c 'sleep 300; :' {name} & sleep 0.2; pgrep -f {name} >/dev/null && echo running; wait",
            "timeout": 1})
        assert not slow.ok and "]\nrunning\n[timed out after 1 s" in slow.text
        assert await _until_gone(name) == []
        leftover = _marker()
        background = await toolbox.call(
            "bash", {"command": f"bash -c 'sleep 300; :' {leftover} & sleep 0.2; pgrep -f {leftover} && echo bye"})
        assert background.text.endswith("\nbye\n[exit code 0]")  # not held up by the child's open stdout
        assert await _until_gone(leftover) == []  # the process group is killed when the command ends
    finally:
        await toolbox.aclose()


async def test_unsafe_bash_is_not_held_up_by_a_process_that_escaped_its_group(repo: Path) -> None:
    # Without the sandbox's PID namespace a `setsid` child escapes the group kill (docs/tools.md says so);
    # it must still not hold the call open through the stdout it inherited.
    toolbox = Toolbox(repo, ["bash"], unsafe_bash=True, bwrap_path="/nonexistent/bwrap")
    name = _marker()
    try:
        result = await toolbox.call(
            # `; :` keeps the shell (bash would exec a lone command), so its command line names the marker.
            "bash", {"command": f"setsid bash -c 'sleep 300; :' {name} & sleep 0.3; echo detached"}
        )
        assert result.ok
        assert result.text.endswith("\ndetached\n[exit code 0]")
    finally:
        await toolbox.aclose()
        for pid in _processes_with(name):  # the setsid'd shell leads its own group, its sleep included
            os.killpg(pid, signal.SIGKILL)
