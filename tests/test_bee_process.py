"""The real bee process: ``python -m hive.bee --brief ...`` with a ``script:`` model, spoken to over pipes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from hive.bee.process import hive_output
from hive.records import BEE_MESSAGE_ADAPTER, BeeMessage, Report, TranscriptEntry

pytestmark = pytest.mark.slow

SECRET = "sk-test-XYZ"
ROLE = """---
name: investigator
description: A test investigator.
tools: read, grep, ls
---
You are {bee}, one of {n} investigators. Problem: {problem}. Your angle: {angle}. Others: {others}.
"""
REPORT = "## Found\n- app.py:2 returns 41.\n## Ruled out\n- config.\n## Open\n- none."


class BeeProcess:
    """A started bee and everything it has said so far."""

    def __init__(self, proc: asyncio.subprocess.Process, run_dir: Path) -> None:
        self.proc = proc
        self.run_dir = run_dir
        self.messages: list[BeeMessage] = []

    async def next(self) -> BeeMessage:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout=30)
        assert line, "the bee closed stdout without a report"
        message = BEE_MESSAGE_ADAPTER.validate_python(orjson.loads(line))  # every line must be a message
        self.messages.append(message)
        return message

    async def until(self, kind: str) -> BeeMessage:
        while True:
            message = await self.next()
            if message.type == kind:
                return message

    async def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def finish(self) -> tuple[Report, int]:
        report = await self.until("report")
        assert isinstance(report, Report)
        assert self.proc.stdout is not None
        rest = await asyncio.wait_for(self.proc.stdout.read(), timeout=30)
        assert rest == b"", f"the bee wrote after its report: {rest!r}"
        code = await asyncio.wait_for(self.proc.wait(), timeout=30)
        return report, code

    def of(self, kind: str) -> list[Any]:
        return [m for m in self.messages if m.type == kind]

    def transcript(self) -> list[TranscriptEntry]:
        path = self.run_dir / "bees" / "bee-1" / "transcript.jsonl"
        return [TranscriptEntry.model_validate(orjson.loads(line)) for line in path.read_bytes().splitlines()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    (repo / ".hive" / "roles").mkdir(parents=True)
    (repo / ".hive" / "roles" / "investigator.md").write_text(ROLE)
    (repo / "app.py").write_text("def answer():\n    return 41  # off by one\n")
    (repo / "settings.env").write_text(f"OPENAI_API_KEY={SECRET}\n")
    return repo


async def start(
    tmp_path: Path, repo: Path, turns: list[dict[str, Any]], *, run_dir: Path | None = None, **brief: Any
) -> BeeProcess:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"bees": {"bee-1": turns}}))
    run_dir = run_dir or tmp_path / "run"
    brief_path = run_dir / "bees" / "bee-1" / "brief.json"
    brief_path.parent.mkdir(parents=True)
    brief_path.write_text(
        json.dumps(
            {
                "bee": "bee-1",
                "problem": "Why is the answer 41?",
                "angle": "the arithmetic",
                "others": {"bee-2": "the configuration"},
                "repo": str(repo),
                "run_dir": str(run_dir),
                "model": f"script:{script}",
                **brief,
            }
        )
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hive.bee",
        "--brief",
        str(brief_path),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=repo,
        env={**os.environ, "OPENAI_API_KEY": SECRET},
    )
    return BeeProcess(proc, run_dir)


@pytest.fixture
async def cleanup() -> Any:
    started: list[BeeProcess] = []
    yield started
    for bee in started:
        if bee.proc.returncode is None:
            bee.proc.kill()
            await bee.proc.wait()


async def test_a_scripted_bee_runs_end_to_end(tmp_path: Path, repo: Path, cleanup: list[BeeProcess]) -> None:
    turns = [
        {
            "say": "FOUND: app.py:2 returns 41 where the caller expects 42.",
            "tools": [{"name": "read", "args": {"path": "app.py"}}, {"name": "read", "args": {"path": "settings.env"}}],
        },
        {"tools": [{"name": "bash", "args": {"command": "echo hi > app.py"}}]},
        {"say": REPORT},
    ]
    bee = await start(tmp_path, repo, turns)
    cleanup.append(bee)
    ready = await bee.next()
    assert ready.type == "ready"
    assert ready.model_dump()["protocol"] == 1
    report, code = await bee.finish()

    assert (report.outcome, report.text, code) == ("reported", REPORT, 0)
    assert [u.text for u in bee.of("utterance")] == ["FOUND: app.py:2 returns 41 where the caller expects 42."]
    activities = bee.of("activity")
    assert [a.tool for a in activities] == ["read", "read", "bash"]
    assert "refused" in activities[2].text
    assert len(bee.of("usage")) == 3
    entries = bee.transcript()
    results = [e for e in entries if e.event == "tool_result"]
    assert "return 41" in (results[0].content or "")
    assert "[redacted]" in (results[1].content or "")
    assert "not allowed" in (results[2].content or "")
    raw = (bee.run_dir / "bees" / "bee-1" / "transcript.jsonl").read_text()
    assert SECRET not in raw
    assert (repo / "app.py").read_text().startswith("def answer")


async def test_a_bee_never_sees_the_runs_directory_inside_its_repository(
    tmp_path: Path, repo: Path, cleanup: list[BeeProcess]
) -> None:
    # `hive start --repo .` with the default ./runs: the run, and its transcripts, live inside the repository.
    earlier = repo / "runs" / "20260101-000000-abcd" / "board.jsonl"
    earlier.parent.mkdir(parents=True)
    earlier.write_text('{"text": "FOUND: return 41 is a note withheld from this bee"}\n')
    (earlier.parent / "run.json").write_text("{}")
    search = {"name": "grep", "args": {"pattern": "return 41"}}
    turns = [
        {"say": "FOUND: app.py:2 has return 41 where 42 is expected.", "tools": [search]},
        {"tools": [search, {"name": "read", "args": {"path": "runs/20260101-000000-abcd/board.jsonl"}}]},
        {"say": REPORT},
    ]
    bee = await start(tmp_path, repo, turns, run_dir=repo / "runs" / "20260102-000000-cdef")
    cleanup.append(bee)
    report, code = await bee.finish()
    assert (report.outcome, code) == ("reported", 0)
    results = [e.content or "" for e in bee.transcript() if e.event == "tool_result"]
    # The second search does not find the first one's result in the bee's own transcript, nor the earlier run.
    assert results[0] == results[1] == "app.py:2:    return 41  # off by one"
    assert "hive's own runs directory" in results[2] and "withheld" not in results[2]


def test_hive_output_is_the_runs_directory_or_the_runs_in_it(tmp_path: Path) -> None:
    def run(directory: Path) -> Path:
        directory.mkdir(parents=True)
        (directory / "run.json").write_text("{}")
        return directory

    repo = tmp_path / "repo"
    (repo / "app").mkdir(parents=True)
    first, second = run(repo / "runs" / "r1"), run(repo / "runs" / "r2")
    assert hive_output(repo, second) == [repo / "runs"]
    outside = run(tmp_path / "runs" / "r1")
    assert hive_output(repo, outside) == [tmp_path / "runs"]
    # A project's own runs/ keeps its own files visible: only hive's runs in it are left out.
    (repo / "runs" / "exp-3").mkdir()
    (repo / "runs" / "notes.md").write_text("learning rate 0.1\n")
    assert hive_output(repo, second) == [first, second]
    # --runs-dir . : the runs directory is the repository, so only the runs.
    third = run(repo / "r3")
    assert hive_output(repo, third) == [third]
    # A runs directory holding the repository (--runs-dir ..): the runs beside it, never the repository.
    assert hive_output(repo, tmp_path / "r9") == [tmp_path / "r9"]


async def test_notes_over_the_pipe_reach_the_bee_and_bring_a_last_call(
    tmp_path: Path, repo: Path, cleanup: list[BeeProcess]
) -> None:
    turns = [
        {"tools": [{"name": "read", "args": {"path": "app.py"}}]},
        {"say": REPORT, "delay": 1.0},
        {"say": "NO CHANGE"},
    ]
    bee = await start(tmp_path, repo, turns)
    cleanup.append(bee)
    await bee.until("activity")
    note = {"kind": "note", "note": "n-1", "bee": "bee-2", "note_kind": "finding", "text": "FOUND: config is fine"}
    await bee.send({"type": "notes", "items": [note]})
    report, code = await bee.finish()

    assert (report.outcome, report.text, code) == ("reported", REPORT, 0)
    assert [r.delivered for r in bee.of("received")] == [["n-1"]]
    last_call = [e.content for e in bee.transcript() if e.event == "message" and e.role == "user"][-1]
    assert last_call is not None and last_call.startswith("Last call before your report is handed in.")
    assert "- bee-2 (finding): FOUND: config is fine" in last_call


async def test_wrap_up_cuts_the_bee_short(tmp_path: Path, repo: Path, cleanup: list[BeeProcess]) -> None:
    turns = [
        {"tools": [{"name": "ls", "args": {}}], "delay": 0.5},
        {"tools": [{"name": "read", "args": {"path": "app.py"}}]},
        {"say": REPORT},
    ]
    bee = await start(tmp_path, repo, turns)
    cleanup.append(bee)
    await bee.until("ready")
    await bee.send({"type": "wrap_up", "reason": "the run deadline passed"})
    report, code = await bee.finish()
    assert (report.outcome, report.reason, code) == ("cut_short", "the run deadline passed", 0)
    assert all("time is up" in a.text for a in bee.of("activity"))


async def test_stop_ends_a_bee_in_the_middle_of_a_model_call(
    tmp_path: Path, repo: Path, cleanup: list[BeeProcess]
) -> None:
    bee = await start(tmp_path, repo, [{"say": REPORT, "delay": 60}])
    cleanup.append(bee)
    await bee.until("ready")
    assert bee.proc.stdin is not None
    bee.proc.stdin.write(b'not json\n{"type": "no-such-message"}\n\n')
    await bee.send({"type": "stop"})
    report, code = await bee.finish()
    assert (report.outcome, report.reason, code) == ("cut_short", "stopped", 0)
    assert bee.proc.stderr is not None
    err = (await bee.proc.stderr.read()).decode()
    assert err.count("ignored a malformed line from the coordinator") == 2


async def test_sigterm_ends_a_bee_with_a_report(tmp_path: Path, repo: Path, cleanup: list[BeeProcess]) -> None:
    bee = await start(tmp_path, repo, [{"tools": [{"name": "ls", "args": {}}]}, {"say": REPORT, "delay": 60}])
    cleanup.append(bee)
    await bee.until("activity")
    bee.proc.send_signal(signal.SIGTERM)
    report, code = await bee.finish()
    assert (report.outcome, report.reason, code) == ("cut_short", "terminated", 0)


async def test_closing_stdin_ends_the_bee(tmp_path: Path, repo: Path, cleanup: list[BeeProcess]) -> None:
    bee = await start(tmp_path, repo, [{"say": REPORT, "delay": 60}])
    cleanup.append(bee)
    await bee.until("ready")
    assert bee.proc.stdin is not None
    bee.proc.stdin.close()
    report, code = await bee.finish()
    assert (report.outcome, report.reason, code) == ("cut_short", "the coordinator closed the channel", 0)


async def test_an_unknown_role_fails_with_a_report(tmp_path: Path, repo: Path, cleanup: list[BeeProcess]) -> None:
    bee = await start(tmp_path, repo, [], role="no-such-role")
    cleanup.append(bee)
    report, code = await bee.finish()
    assert bee.messages[0].type == "ready"
    assert report.outcome == "failed"
    assert report.reason is not None and "no-such-role" in report.reason
    assert code == 1


async def test_an_unusable_brief_is_a_usage_error_and_prints_nothing_on_stdout(tmp_path: Path) -> None:
    brief = tmp_path / "brief.json"
    brief.write_text('{"bee": "bee-1"}')
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hive.bee",
        "--brief",
        str(brief),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 2
    assert out == b""
    assert err.decode().startswith("hive.bee: error: brief ")
    assert "problem: field required" in err.decode()


async def test_stray_writes_to_stdout_go_to_stderr_and_the_protocol_keeps_its_own_descriptor() -> None:
    code = (
        "import os, subprocess, sys\n"
        "from hive.bee.__main__ import _claim_stdout\n"
        "fd = _claim_stdout()\n"
        "print('stray print', flush=True)\n"
        "subprocess.run(['echo', 'stray child'])\n"
        "os.write(fd, b'protocol line\\n')\n"
    )
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout=30)
    assert proc.returncode == 0
    assert out == b"protocol line\n"
    assert err.decode().splitlines() == ["stray print", "stray child"]
