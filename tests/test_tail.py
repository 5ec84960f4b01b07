"""``hive tail``: the board in readable form, filters, JSON, gate decisions, and following a board that
another process is writing (appearing late, torn lines, the run ending, the coordinator dying, Ctrl-C)."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from observe_runs import RUN_ID, GoneReader, board_records, run_info, write_run

from hive.board import BoardState
from hive.cli import main
from hive.errors import UsageError
from hive.observe.reading import printable
from hive.observe.tail import (
    FollowedFile,
    RunWatch,
    TailFilter,
    TailPrinter,
    check_bees,
    end_line,
    merge_in_time,
    tail_target,
    wait_for_first_run,
)
from hive.records import BOARD_ADAPTER, BeeInfo, Delivery, GateDecision, Note, RunInfo
from hive.store import write_json_atomic

TIMEOUT = 30.0
"""Generous bounds for slow machines: a test that passes never waits this long."""


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    monkeypatch.setenv("HIVE_RUNS_DIR", str(runs_dir))
    return runs_dir


def tail(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["tail", *args]) == 0
    return capsys.readouterr().out.splitlines()


# --------------------------------------------------------------------------- a finished run


def test_board_with_recipients_and_marks(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    lines = tail(capsys, RUN_ID)
    assert lines[:5] == [
        "03:00:01 bee-1 finding 0.95 n-1 -> bee-2 [in dispute] [confirmed by verify-1]",
        "    FOUND: the export reads 1003 rows and writes 1000.",
        "03:00:02 bee-2 finding 0.85 n-2 [in dispute]",
        "    FOUND: the export writes all 1003 rows",
        "    when run by hand.",
    ]
    assert "03:00:07 bee-3 finding 0.81 n-4 -> bee-1, bee-2 [superseded by n-5: no longer stands]" in lines
    assert "03:00:08 dispute d-1 opened: n-1 (bee-1) vs n-4 (bee-3)" in lines
    assert "03:00:08 conflict notice -> bee-1: n-4, disputed with n-1" in lines
    assert "03:00:10 verifier verify-1 spawned on dispute d-1: n-1 vs n-4" in lines
    assert "03:00:12 n-5 supersedes n-4 (0.93): n-4 no longer stands" in lines
    assert "03:00:12 dispute d-1 resolved: n-4 superseded by n-5" in lines
    assert "03:00:12 correction -> bee-3: n-5 replaces n-4" in lines
    assert not any(" by judge" in line or " by rule" in line for line in lines)  # shown as recipients
    assert not any(line.startswith("--") for line in lines)  # a finished run is printed, not followed


def test_bee_filter(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    lines = tail(capsys, RUN_ID, "--bee", "bee-3")
    notes = [line for line in lines if " finding " in line or " decision " in line]
    assert [line.split()[1] for line in notes] == ["bee-3"]
    assert "03:00:05 n-3 (bee-2) -> bee-3, by rule" in lines  # a delivery to bee-3 of a note not shown
    assert "03:00:12 correction -> bee-3: n-5 replaces n-4" in lines
    assert not any("d-2" in line for line in lines)  # bee-1 vs bee-2


def test_kind_filter(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    lines = tail(capsys, RUN_ID, "--kind", "decision")
    assert lines == ["03:00:04 bee-2 decision 0.50 n-3 -> bee-1, bee-3",
                     "    DECIDED: the fix goes in batches()."]


def test_json_prints_raw_records(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    records = [json.loads(line) for line in tail(capsys, RUN_ID, "--json")]
    assert len(records) == len(board_records())
    assert records[0]["type"] == "note" and records[0]["id"] == "n-1"
    assert {r["type"] for r in records} == {
        "note", "relation", "dispute", "resolution", "delivery", "verifier"}


def test_gates_interleave_decisions_in_time(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    lines = tail(capsys, RUN_ID, "--gates")
    publish = lines.index("03:00:01 gate publish bee-1#1 => publish finding (judge, p 0.95, 100 ms)")
    assert lines[publish + 1].startswith("03:00:01 bee-1 finding 0.95 n-1")
    assert "03:00:04 gate publish bee-1#2 => withhold (fallback, error:timeout, 1000 ms)" in lines
    assert "03:00:08 gate deliver n-4 -> bee-1 => capped (rule, bee-1 already received 10 notes)" in lines
    assert "03:00:08 gate relate n-4 vs n-2 => none (fallback, unsure, 70 ms)" in lines
    times = [line[:8] for line in lines if line[:2].isdigit()]
    assert times == sorted(times)


@pytest.mark.parametrize(("args", "message"), [
    (["no-such-run"], "no run matches 'no-such-run'"),
    ([RUN_ID, "--kind", "rumour"], "unknown note kind 'rumour'"),
])
def test_bad_input_is_one_line_and_exit_2(runs: Path, capsys: pytest.CaptureFixture[str], args: list[str],
                                          message: str) -> None:
    write_run(runs)
    assert main(["tail", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


@pytest.mark.parametrize(("name", "args"), [
    ("board.jsonl", ["--no-follow"]),
    ("board.jsonl", ["--no-follow", "--json"]),
    ("gate.jsonl", ["--no-follow", "--gates"]),
    ("board.jsonl", []),  # a finished run: not followed either
])
def test_a_board_or_gate_log_that_cannot_be_read_is_bad_input(
    runs: Path, capsys: pytest.CaptureFixture[str], name: str, args: list[str]
) -> None:
    paths = write_run(runs)
    (paths.dir / name).unlink()
    (paths.dir / name).mkdir()  # unreadable even to root
    assert main(["tail", RUN_ID, *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"hive: error: cannot read {paths.dir / name}: Is a directory\n"


def test_a_bee_the_run_does_not_have_is_refused_like_audit_does(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(runs)
    for argv in (["tail", RUN_ID, "--bee", "bee-9", "--no-follow"], ["tail", RUN_ID, "--bee", "bee-9"],
                 ["audit", RUN_ID, "--bee", "bee-9"]):
        assert main(argv) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith(f"hive: error: no bee 'bee-9' in run {RUN_ID} (bees: bee-1, bee-2, ")
        assert captured.err.count("\n") == 1


def test_a_bee_filter_accepts_what_may_yet_come() -> None:
    planning = RunInfo(id="r", problem="p", repo=".")
    check_bees(planning, {"bee-9"}, [], running=True)  # no bee listed yet: anything goes
    running = planning.model_copy(update={"bees": [BeeInfo(id="bee-1", angle="a")]})
    check_bees(running, {"bee-1"}, [], running=False)
    check_bees(running, {"verify-3"}, [], running=True)  # a verifier may still be spawned
    check_bees(running, {"bee-2"}, ["bee-2"], running=False)  # on the board, whatever run.json says
    with pytest.raises(UsageError, match="no bee 'verify-3' in run r"):
        check_bees(running, {"verify-3"}, [], running=False)
    with pytest.raises(UsageError, match=r"no bee 'bee-2' in run r \(bees: bee-1\)"):
        check_bees(running, {"bee-2"}, [], running=True)


@pytest.mark.parametrize(("damage", "message"), [("corrupt", "is not a valid run.json"), ("dir", "cannot read")])
def test_no_follow_of_a_run_whose_run_json_cannot_be_read_is_bad_input_like_show(
    runs: Path, capsys: pytest.CaptureFixture[str], damage: str, message: str
) -> None:
    paths = write_run(runs)
    paths.run_json.unlink()
    if damage == "dir":
        paths.run_json.mkdir()
    else:
        paths.run_json.write_text("{torn")
    for command in (["tail", RUN_ID, "--no-follow"], ["show", RUN_ID]):
        assert main(command) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err.startswith("hive: error: ")
        assert message in captured.err and str(paths.run_json) in captured.err
        assert captured.err.count("\n") == 1


@pytest.mark.parametrize("args", [[], ["--json"], ["--gates"]])
def test_a_reader_that_goes_away_ends_tail_quietly_and_successfully(
    runs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    write_run(runs)
    monkeypatch.setattr(sys, "stdout", GoneReader())
    assert main(["tail", RUN_ID, "--no-follow", *args]) == 0
    assert capsys.readouterr().err == ""


def test_tail_started_before_any_run_waits_for_the_first(tmp_path: Path) -> None:
    runs_dir = tmp_path / "runs"  # not even the directory yet: `hive tail` in one terminal, then `hive start`

    async def scenario() -> str:
        waiting = asyncio.create_task(wait_for_first_run(runs_dir))
        await asyncio.sleep(0)
        assert not waiting.done()
        await asyncio.to_thread(write_run, runs_dir)
        return (await asyncio.wait_for(waiting, TIMEOUT)).id

    assert asyncio.run(scenario()) == RUN_ID


def test_a_run_directory_deleted_while_followed_ends_the_tail(
    runs: Path, caplog: pytest.LogCaptureFixture
) -> None:
    paths = write_run(runs, status="running", pid=os.getpid())  # alive: this very process
    watch = RunWatch(paths)
    assert watch.live()
    shutil.rmtree(paths.dir)
    assert not watch.live()
    assert [r.getMessage() for r in caplog.records] == [f"run directory {paths.dir} is gone"]
    assert end_line(paths) == f"-- run {RUN_ID} ended"


def test_no_follow_before_any_run_is_bad_input(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tail", "--no-follow"]) == 2
    assert capsys.readouterr().err == f"hive: error: no runs in {str(runs)!r}\n"


def test_a_directory_that_is_not_a_run_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "something-else").mkdir()
    (tmp_path / "something-else" / "notes.txt").write_text("hello")
    assert main(["tail", str(tmp_path / "something-else")]) == 2
    assert "not a run directory" in capsys.readouterr().err


def test_a_run_directory_not_written_yet_is_a_target(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261130-030000-new"
    run_dir.mkdir()
    assert tail_target(tmp_path, str(run_dir)).dir == run_dir
    (run_dir / ".run.json.4242.tmp").write_text("{")  # the coordinator mid-way through writing run.json
    (run_dir / "bees").mkdir()
    assert tail_target(tmp_path, str(run_dir)).dir == run_dir


def test_stream_prints_each_record_as_it_lands() -> None:
    printer = TailPrinter()
    records = board_records()
    lines = printer.stream(records[:3])
    assert lines[0] == "03:00:01 bee-1 finding 0.95 n-1"  # no recipient yet
    assert lines[-1] == "03:00:02 n-1 (bee-1) -> bee-2, by judge"


def test_filter_on_gate_decisions() -> None:
    notes = {"n-1": Note(id="n-1", bee="bee-1", kind="finding", text="t", score=0.9)}
    withheld = GateDecision(id="g", gate="publish", outcome="withhold", source="judge", bee="bee-2")
    delivery = GateDecision(id="h", gate="deliver", outcome="skip", source="judge", note="n-1", to="bee-2")
    assert TailFilter(bees=frozenset({"bee-2"})).shows(withheld, notes)
    assert not TailFilter(bees=frozenset({"bee-1"})).shows(withheld, notes)
    assert TailFilter(bees=frozenset({"bee-2"})).shows(delivery, notes)
    assert not TailFilter(kinds=frozenset({"decision"})).shows(delivery, notes)
    assert not TailFilter(bees=frozenset({"bee-2"}), kinds=frozenset({"decision"})).shows(delivery, notes)


def test_merge_puts_the_deciding_decision_first_on_a_tie() -> None:
    same_ms = "2026-11-30T03:00:01.000Z"
    decision = GateDecision(id="g", gate="deliver", outcome="deliver", source="judge", at=same_ms)
    delivery = Delivery(note="n-1", to="bee-2", how="judge", at=same_ms)
    assert merge_in_time([delivery], [decision]) == [decision, delivery]


def test_control_characters_never_reach_the_terminal() -> None:
    note = Note(id="n-9", bee="bee-1", kind="finding", text="FOUND: \x1b[2Jcleared\ttab\nsecond", score=0.9)
    lines = TailPrinter().stream([note])
    assert lines[1:] == ["    FOUND: \\x1b[2Jcleared\ttab", "    second"]
    assert printable("\x07bell\x9b") == "\\x07bell\\x9b"


def test_reasons_and_how_the_run_ended_are_escaped_too(runs: Path) -> None:
    decision = GateDecision(id="g-9", gate="publish", outcome="withhold", source="fallback", bee="bee-1",
                            reason="error:\x1b[2J", at="2026-11-30T03:00:01.000Z")
    assert TailPrinter().stream([decision]) == [
        "03:00:01 gate publish bee-1 => withhold (fallback, error:\\x1b[2J)"
    ]
    paths = write_run(runs)
    write_json_atomic(paths.run_json, run_info().model_copy(update={"exit_reason": "crashed: \x1b]0;t\x07"}))
    assert end_line(paths) == f"-- run {RUN_ID} finished (crashed: \\x1b]0;t\\x07)"


def test_backlog_marks_a_note_superseded_later_on_the_board() -> None:
    printer = TailPrinter()
    printer.backlog(board_records())
    assert isinstance(printer.state, BoardState)
    assert printer.state.superseded == {"n-4": "n-5"}


# --------------------------------------------------------------------------- following a live board


WRITER = r"""
import json, os, sys
from pathlib import Path
run = Path(sys.argv[1])
for line in sys.stdin:
    op = json.loads(line)
    if op["op"] == "append":
        fd = os.open(run / op["file"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.write(fd, op["data"].encode())
        os.close(fd)
    elif op["op"] == "run":
        info = {"id": run.name, "problem": "p", "repo": ".", "status": op["status"], "pid": os.getpid(),
                "started_at": "2026-11-30T03:00:00.000Z"}
        tmp = run / ".run.json.tmp"
        tmp.write_text(json.dumps(info))
        os.replace(tmp, run / "run.json")
    elif op["op"] == "exit":
        sys.exit(0)
    print("ok", flush=True)
"""


class Writer:
    """Another process writing the run's files, one command at a time, acknowledged."""

    def __init__(self, run_dir: Path) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", WRITER, str(run_dir)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)

    def do(self, **op: Any) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(op) + "\n")
        self.proc.stdin.flush()
        if op["op"] != "exit":
            assert self.proc.stdout.readline().strip() == "ok"

    def append(self, file: str, data: str) -> None:
        self.do(op="append", file=file, data=data)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.do(op="exit")
        self.proc.wait(TIMEOUT)


class Tail:
    """``hive tail`` in its own process, its output lines collected as they come."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "hive", "tail", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def expect(self, text: str) -> str:
        """Wait for a line containing ``text``; return it."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=deadline - time.monotonic())
            except queue.Empty:
                break
            if line is None:
                break
            self.seen.append(line)
            if text in line:
                return line
        raise AssertionError(f"tail never printed {text!r}; it printed {self.seen}")

    def next_line(self) -> str | None:
        line = self.lines.get(timeout=TIMEOUT)
        if line is not None:
            self.seen.append(line)
        return line

    def wait_watching(self) -> None:
        """Wait until the tail process has an inotify watch (Linux), so later writes are truly "late"."""
        fdinfo = Path(f"/proc/{self.proc.pid}/fdinfo")
        deadline = time.monotonic() + TIMEOUT
        while fdinfo.is_dir() and time.monotonic() < deadline:
            for entry in fdinfo.iterdir():
                try:
                    if "inotify wd:" in entry.read_text():
                        return
                except OSError:
                    continue
            time.sleep(0.02)
        if fdinfo.is_dir():
            raise AssertionError("tail never started watching")

    def finish(self) -> tuple[int, str]:
        code = self.proc.wait(TIMEOUT)
        assert self.proc.stderr is not None
        return code, self.proc.stderr.read()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)


def note_line(id: str, bee: str, text: str) -> str:
    note = Note(id=id, bee=bee, kind="finding", text=text, score=0.9)
    return note.model_dump_json(exclude_none=True) + "\n"


def test_a_board_truncated_or_replaced_is_read_again_from_its_start(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    board = tmp_path / "board.jsonl"
    followed = FollowedFile(board, BOARD_ADAPTER)
    assert followed.read_new() == []  # not there yet
    board.write_text(note_line("n-1", "bee-1", "FOUND: one") + note_line("n-2", "bee-1", "FOUND: two"))
    assert [r.id for r in followed.read_new()] == ["n-1", "n-2"]  # type: ignore[union-attr]
    assert caplog.records == []

    board.write_text(note_line("n-3", "bee-2", "FOUND: three"))  # truncated, then written again: shorter
    assert [r.id for r in followed.read_new()] == ["n-3"]  # type: ignore[union-attr]

    replacement = tmp_path / "new.jsonl"
    replacement.write_text("".join(note_line(f"n-{i}", "bee-3", "FOUND: a longer board") for i in range(4, 8)))
    os.replace(replacement, board)  # rotated: a new file, longer than what was read
    assert [r.id for r in followed.read_new()] == ["n-4", "n-5", "n-6", "n-7"]  # type: ignore[union-attr]
    warnings = [r.getMessage() for r in caplog.records]
    assert warnings == [f"{board} was truncated or replaced: reading it again from its start"] * 2


@pytest.mark.slow
def test_follow_a_board_that_appears_late_with_torn_lines_until_the_run_ends(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261130-030000-live"
    run_dir.mkdir()
    follower = Tail(str(run_dir))
    writer = Writer(run_dir)
    try:
        follower.wait_watching()  # the directory is empty: no run.json, no board yet
        writer.do(op="run", status="running")
        writer.append("board.jsonl", note_line("n-1", "bee-1", "FOUND: first"))
        assert "bee-1 finding 0.90 n-1" in follower.expect("n-1")
        assert follower.next_line() == "    FOUND: first"

        torn = note_line("n-2", "bee-2", "FOUND: written in two pieces")
        writer.append("board.jsonl", torn[:25])  # a torn line: the tail wakes up to half a record
        writer.do(op="run", status="running")  # and again, while the line is still torn
        writer.append("board.jsonl", torn[25:])
        assert "bee-2 finding 0.90 n-2" in follower.expect("n-2")
        assert follower.next_line() == "    FOUND: written in two pieces"

        delivery = Delivery(note="n-2", to="bee-1", how="judge").model_dump_json() + "\n"
        writer.append("board.jsonl", delivery)
        assert follower.expect("n-2 (bee-2) -> bee-1, by judge")

        writer.do(op="run", status="finished")
        code, err = follower.finish()
        assert follower.expect("-- run 20261130-030000-live finished")
        assert code == 0
        assert "Traceback" not in err and "corrupt" not in err
    finally:
        writer.close()
        follower.kill()


@pytest.mark.slow
def test_follow_ends_when_the_coordinator_dies_without_a_word(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261130-030000-dead"
    run_dir.mkdir()
    writer = Writer(run_dir)
    writer.do(op="run", status="running")
    follower = Tail(str(run_dir), "--follow")
    try:
        follower.wait_watching()
        writer.append("board.jsonl", note_line("n-1", "bee-1", "FOUND: last words"))
        follower.expect("n-1")
        writer.close()  # the "coordinator" exits; run.json still says running
        code, _ = follower.finish()
        assert code == 0
        assert follower.expect("-- run 20261130-030000-dead interrupted")
    finally:
        writer.close()
        follower.kill()


@pytest.mark.slow
def test_follow_a_run_whose_run_json_cannot_be_read_warns_once_and_goes_on(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261130-030000-torn"
    run_dir.mkdir()
    (run_dir / "run.json").write_text("{torn")
    writer = Writer(run_dir)
    follower = Tail(str(run_dir))
    try:
        follower.wait_watching()
        writer.append("board.jsonl", note_line("n-1", "bee-1", "FOUND: still shown"))
        follower.expect("n-1")  # run.json was read at the start and again at this wake-up
        writer.do(op="run", status="finished")  # a readable run.json again: its end is seen
        code, err = follower.finish()
        assert code == 0
        assert follower.expect("-- run 20261130-030000-torn finished")
        assert err == (f"hive: warning: {run_dir / 'run.json'} is not a valid run.json: when the run ends "
                       "cannot be told, so tail follows until Ctrl-C\n")
    finally:
        writer.close()
        follower.kill()


@pytest.mark.slow
def test_follow_json_with_gates(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261130-030000-json"
    run_dir.mkdir()
    writer = Writer(run_dir)
    writer.do(op="run", status="running")
    follower = Tail(str(run_dir), "--json", "--gates")
    try:
        follower.wait_watching()
        decision = GateDecision(id="g-1", gate="publish", outcome="publish", source="judge", bee="bee-1",
                                at="2026-11-30T03:00:01.000Z")
        writer.append("gate.jsonl", decision.model_dump_json(exclude_none=True) + "\n")
        assert json.loads(follower.expect('"g-1"'))["gate"] == "publish"
        writer.append("board.jsonl", note_line("n-1", "bee-1", "FOUND: json"))
        assert json.loads(follower.expect('"n-1"'))["type"] == "note"
        writer.do(op="run", status="finished")
        code, _ = follower.finish()
        assert code == 0
        while (line := follower.next_line()) is not None:
            json.loads(line)  # nothing but JSON, not even the end line
    finally:
        writer.close()
        follower.kill()


@pytest.mark.slow
def test_ctrl_c_exits_cleanly(tmp_path: Path) -> None:
    run_dir = tmp_path / "20261130-030000-int"
    run_dir.mkdir()
    writer = Writer(run_dir)
    writer.do(op="run", status="running")
    follower = Tail(str(run_dir))
    try:
        follower.wait_watching()
        os.kill(follower.proc.pid, signal.SIGINT)
        code, err = follower.finish()
        assert code in (0, 130)
        assert "Traceback" not in err
    finally:
        writer.close()
        follower.kill()


def test_no_follow_prints_a_running_run_and_returns(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs, status="running", pid=os.getpid())  # alive: this very process
    lines = tail(capsys, RUN_ID, "--no-follow")
    assert lines[0].startswith("03:00:01 bee-1 finding 0.95 n-1")
    assert not any(line.startswith("--") for line in lines)
