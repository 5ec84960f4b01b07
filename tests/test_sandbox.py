"""bash in bubblewrap: nothing written outside a private /tmp, no network, no secrets, no escaping process.

Each test attacks the sandbox the way a model could, through the tool's one argument, and checks the host
afterwards. They need a working ``bwrap`` (scripts/setup.sh installs it) and skip with the reason when the
machine cannot make a sandbox at all.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hive.tools.bash import BashTool, is_secret_name, sandbox_env
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
    result = await bash.run({"command": f"touch /var/tmp/{name} /etc/{name} /dev/shm/ok 2>&1; echo done"})
    assert result.text.count("Read-only file system") == 2
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
    # The marker rides in the inner shell's argv ($0), so the host can find the process by it.
    command = (
        f"bash -c 'sleep 300' {first} & setsid nohup bash -c 'sleep 300' {second} >/dev/null 2>&1 & "
        "sleep 0.2; echo started"
    )
    result = await bash.run({"command": command})
    assert result.text == "started\n[exit code 0]"
    assert await _until_gone(first) == []
    assert await _until_gone(second) == []


async def test_timeout_kills_the_whole_tree(bash: BashTool) -> None:
    child, grandchild = _marker(), _marker()
    command = f"bash -c 'bash -c \"sleep 300\" {grandchild} & sleep 300' {child} & echo waiting; wait"
    result = await bash.run({"command": command, "timeout": 1})
    assert not result.ok
    assert result.text == "waiting\n[timed out after 1 s; the command and its children were killed]"
    assert result.activity == f"ran `{command[:59]}…`: timed out after 1 s"
    assert await _until_gone(child) == []
    assert await _until_gone(grandchild) == []


async def test_cancelling_the_call_kills_the_command(bash: BashTool) -> None:
    name = _marker()
    task = asyncio.create_task(bash.run({"command": f"bash -c 'sleep 300' {name}"}))
    for _ in range(200):
        if _processes_with(name):
            break
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until_gone(name) == []


async def test_aclose_kills_running_commands(repo: Path) -> None:
    tool = BashTool(repo, timeout=60)
    name = _marker()
    task = asyncio.create_task(tool.run({"command": f"bash -c 'sleep 300' {name}"}))
    for _ in range(200):
        if _processes_with(name):
            break
        await asyncio.sleep(0.02)
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
    task = asyncio.create_task(tool.run({"command": f"bash -c 'sleep 300' {name}"}))
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
        name = _marker()
        slow = await toolbox.call("bash", {"command": f"bash -c 'sleep 300' {name} & wait", "timeout": 1})
        assert not slow.ok and "timed out after 1 s" in slow.text
        assert await _until_gone(name) == []
        leftover = _marker()
        background = await toolbox.call("bash", {"command": f"bash -c 'sleep 300' {leftover} & echo bye"})
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
            "bash", {"command": f"setsid bash -c 'sleep 300' {name} & sleep 0.3; echo detached"}
        )
        assert result.ok
        assert result.text.endswith("\ndetached\n[exit code 0]")
    finally:
        await toolbox.aclose()
        for pid in _processes_with(name):
            os.kill(pid, signal.SIGKILL)
