"""The ends of a run: the coordinator's own model calls cut short by Ctrl-C, an answer.md that cannot be
written, and a runs directory on a full disk."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hive.board import DisputeState
from hive.cli import main
from hive.coordinator import Coordinator
from hive.coordinator.options import StartOptions, check_runs_dir
from hive.coordinator.run import waiting_note
from hive.errors import RunFailed, UsageError
from hive.records import BOARD_ADAPTER, BeeInfo, Dispute, Note, Relation, Resolution, RunInfo, Verifier
from hive.runs import RunPaths
from hive.store import JsonlWriter, read_all, write_json_atomic
from hive.testing import LocalHTTPServer
from tests.hive_runs import (
    hive_command,
    load_info,
    ls,
    make_repo,
    only_run,
    publish_rules,
    relation,
    report,
    tmpfs,
    turn,
    write_judge,
    write_script,
)

SLOW = 60.0
"""Seconds the local provider takes to answer the coordinator: far longer than any test waits."""


def completion(text: str) -> dict[str, Any]:
    return {"id": "c-1", "object": "chat.completion", "model": "m",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


def two_bees(root: Path) -> tuple[Path, Path]:
    script = write_script(root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the rows.", ls()), report()],
        "bee-2": [turn("Reading the configuration module before saying anything at all.", ls()), report()],
    })
    return script, write_judge(root, publish_rules())


def pin_bees_to(repo: Path, model: str) -> None:
    """Role files in the repository that give the bees their own model, so that ``--model`` serves only the
    coordinator's calls (planning and the answer)."""
    roles = repo / ".hive" / "roles"
    roles.mkdir(parents=True)
    packaged = Path(__file__).resolve().parent.parent / "roles"
    for name in ("investigator", "verifier"):
        text = (packaged / f"{name}.md").read_text()
        (roles / f"{name}.md").write_text(text.replace(f"name: {name}\n", f"name: {name}\nmodel: {model}\n", 1))


@contextlib.contextmanager
def hive_started(root: Path, server: LocalHTTPServer, *extra: str) -> Iterator[subprocess.Popen[bytes]]:
    repo = make_repo(root)
    script, judge = two_bees(root)
    pin_bees_to(repo, f"script:{script}")
    args = ["start", "Why does the export drop rows?", "--repo", str(repo), "--model", "openai-compat:m",
            "--judge", f"script:{judge}", "--runs-dir", str(root / "runs"), "--plain", *extra]
    env = {**os.environ, "HIVE_BASE_URL": f"{server.url}/v1"}
    with open(root / "out.txt", "wb") as out, open(root / "err.txt", "wb") as err:
        proc = subprocess.Popen(hive_command(*args), cwd=root, stdout=out, stderr=err, env=env,
                                stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


def wait_for_output(root: Path, text: str, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if text in (root / "out.txt").read_text(errors="replace"):
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} never printed:\n{(root / 'out.txt').read_text(errors='replace')}")


@pytest.mark.slow
def test_ctrl_c_while_the_answer_is_written_writes_a_digest_and_marks_the_run_interrupted(tmp_path: Path) -> None:
    with LocalHTTPServer() as server:
        server.reply(completion("The model's answer."), delay=SLOW)
        with hive_started(tmp_path, server, "--angle", "a", "--angle", "b") as proc:
            wait_for_output(tmp_path, "writing the answer")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 130
    run_dir = only_run(tmp_path / "runs")
    info = load_info(run_dir)
    assert (info.status, info.exit_reason) == ("interrupted", "interrupted by the user")
    assert info.settings["answer_from"] == "digest"
    answer = (run_dir / "answer.md").read_text()
    assert "Interrupted while the answer was being written: a digest of the reports." in answer
    assert "app/export.py:5 drops the final partial batch" in answer
    assert f"'hive resume {info.id}'" in (tmp_path / "err.txt").read_text()


@pytest.mark.slow
def test_ctrl_c_while_angles_are_planned_stops_at_once_with_generic_angles(tmp_path: Path) -> None:
    with LocalHTTPServer() as server:
        server.reply(completion('["one", "two"]'), delay=SLOW)
        with hive_started(tmp_path, server, "--bees", "2") as proc:
            wait_for_output(tmp_path, "planning 2 angles")
            proc.send_signal(signal.SIGINT)
            assert proc.wait(timeout=30) == 130  # not after the planner's reply
    info = load_info(only_run(tmp_path / "runs"))
    assert info.status == "interrupted"
    assert info.settings["angles_from"] == "fallback"
    assert [b.outcome for b in info.bees] == ["cut_short", "cut_short"]  # `hive resume` starts them
    assert "angle planning was interrupted; using generic angles" in (tmp_path / "out.txt").read_text()


@pytest.mark.slow
def test_an_answer_that_cannot_be_written_fails_the_run_in_one_line_and_resume_writes_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, judge = two_bees(tmp_path)
    opts = StartOptions(problem="Why does the export drop rows?", repo=make_repo(tmp_path), model=f"script:{script}",
                        bees=2, angles=("a", "b"), judge=(f"script:{judge}",), runs_dir=tmp_path / "runs", grace=5.0)

    def block_the_answer(paths: RunPaths) -> None:
        paths.answer.mkdir()  # a directory where answer.md goes: the rename over it fails, as on a full disk

    with pytest.raises(RunFailed, match=r"cannot write .*answer\.md: Is a directory; 'hive resume .*' writes it"):
        asyncio.run(Coordinator(opts, on_created=block_the_answer).run())
    run_dir = only_run(tmp_path / "runs")
    info = load_info(run_dir)
    assert info.status == "failed" and "answer.md" in (info.exit_reason or "")
    assert sorted(p.name for p in run_dir.iterdir()) == ["answer.md", "bees", "board.jsonl", "gate.jsonl", "run.json"]

    (run_dir / "answer.md").rmdir()
    assert main(["resume", str(run_dir), "--quiet"]) == 0
    assert "The answer: the batching drops the last partial batch." in (run_dir / "answer.md").read_text()
    assert load_info(run_dir).status == "finished"
    assert "The answer: the batching drops" in capsys.readouterr().out


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    with tmpfs(tmp_path / "disk", "64k") as mount:
        with contextlib.suppress(OSError), open(mount / "filler", "wb") as filler:
            while True:
                filler.write(b"\0" * 4096)
                filler.flush()
        yield mount


def test_a_runs_directory_on_a_full_disk_is_refused_before_anything_is_written(full_disk: Path) -> None:
    with pytest.raises(UsageError, match=r"is not writable \(No space left on device\)"):
        check_runs_dir(full_disk / "runs")
    assert sorted(p.name for p in full_disk.iterdir()) == ["filler"]


@pytest.mark.slow
def test_the_printed_answer_cannot_drive_the_terminal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script, judge = two_bees(tmp_path)
    data = json.loads(script.read_text())
    data["answer"] = "The batching\x1b]0;owned\x07 drops\x1b[2J rows."
    script.write_text(json.dumps(data))
    runs = tmp_path / "runs"
    assert main(["start", "Why?", "--repo", str(make_repo(tmp_path)), "--model", f"script:{script}", "--judge",
                 f"script:{judge}", "--runs-dir", str(runs), "--angle", "a", "--angle", "b", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "The batching\\x1b]0;owned\\x07 drops\\x1b[2J rows." in out
    assert data["answer"] in (only_run(runs) / "answer.md").read_text()  # the file keeps what the model wrote


def test_a_run_waiting_for_a_dispute_after_every_bee_ended_says_so() -> None:
    """Without the note, a run sits silent for up to --dispute-timeout seconds after its last bee: it looks hung."""
    opened = [DisputeState("d-1", ("n-0001", "n-0002"), "2026-11-30T09:00:00.000Z"),
              DisputeState("d-2", ("n-0003", "n-0004"), "2026-11-30T09:00:20.000Z")]
    now = datetime(2026, 11, 30, 9, 0, 15, tzinfo=UTC).timestamp()
    assert waiting_note(opened, 60.0, now) == (
        "every bee has ended; d-1, d-2 still open: a verifier starts in 45 s (--dispute-timeout 60)")
    assert waiting_note(opened[:1], 10.0, now).endswith("a verifier starts in 0 s (--dispute-timeout 10)")


def test_resume_of_a_run_whose_records_cannot_be_read_is_refused_in_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script, judge = two_bees(tmp_path)
    paths = RunPaths(tmp_path / "runs" / "20261130-030000-aaaa")
    paths.dir.mkdir(parents=True)
    write_json_atomic(paths.run_json, RunInfo(
        id=paths.id, problem="Why?", repo=str(make_repo(tmp_path)), model=f"script:{script}",
        judge=[f"script:{judge}"], status="interrupted", bees=[BeeInfo(id="bee-1", angle="a"),
                                                               BeeInfo(id="bee-2", angle="b")]))
    paths.board.mkdir()  # read() fails on it as on a file the user may not read
    assert main(["resume", str(paths.dir)]) == 2
    err = capsys.readouterr().err
    assert err == f"hive: error: cannot resume run {paths.id}: cannot read {paths.board}: Is a directory\n"


@pytest.mark.slow
def test_resume_starts_a_verifier_the_board_names_but_run_json_missed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The run stopped between the board's verifier line and run.json's rewrite (a full disk fails the new file
    first): the verifier is started on resume and settles its dispute, and no second verify-1 is made."""
    batch = "FOUND: app/export.py:5 drops the last partial batch."
    cutoff = "FOUND: the rows are dropped by app/config.py:2 CUTOFF_HOUR which filters the last rows after midnight."
    script = write_script(tmp_path, {"verify-1": [
        turn("FOUND: verified: the rows are dropped by app/export.py:5 in the last batch; CUTOFF_HOUR filters nothing.",
             ls()),
        report()]})
    settles = {"gate": "relate", "when": {"later": "verified", "earlier": "CUTOFF"},
               "answers": {"relation": relation("supersedes", 0.95)}}
    judge = write_judge(tmp_path, [*publish_rules(), settles])
    paths = RunPaths(tmp_path / "runs" / "20261130-030000-aaaa")
    paths.dir.mkdir(parents=True)
    write_json_atomic(paths.run_json, RunInfo(
        id=paths.id, problem="Why?", repo=str(make_repo(tmp_path)), model=f"script:{script}",
        judge=[f"script:{judge}"], status="interrupted",
        bees=[BeeInfo(id="bee-1", angle="a", outcome="reported"), BeeInfo(id="bee-2", angle="b", outcome="reported")]))
    with JsonlWriter(paths.board) as board:
        for record in (Note(id="n-0001", bee="bee-1", kind="finding", text=batch, score=0.9),
                       Note(id="n-0002", bee="bee-2", kind="finding", text=cutoff, score=0.9),
                       Relation(later="n-0002", earlier="n-0001", relation="contradicts", score=0.95),
                       Dispute(id="d-1", notes=("n-0001", "n-0002"), at="2026-11-30T03:00:10.000Z"),
                       Verifier(bee="verify-1", dispute="d-1", notes=("n-0001", "n-0002"))):
            board.append(record)

    assert main(["resume", str(paths.dir), "--quiet"]) == 0
    assert f"resuming run {paths.id}: starting verify-1 again" in capsys.readouterr().err
    info = load_info(paths.dir)
    assert [(b.id, b.outcome) for b in info.bees] == [("bee-1", "reported"), ("bee-2", "reported"),
                                                       ("verify-1", "reported")]
    assert info.bees[2].angle.startswith(f'Two investigators disagree. bee-1 reported: "{batch}"')
    records, _ = read_all(paths.board, BOARD_ADAPTER)
    assert [(r.dispute, r.superseded) for r in records if isinstance(r, Resolution)] == [("d-1", "n-0002")]
    assert [r.bee for r in records if isinstance(r, Verifier)] == ["verify-1"]
