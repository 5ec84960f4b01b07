"""Every count of what a run spent agrees, wherever it is read: ``run.json``, ``hive audit``, the live view's
header and ``hive start --json``, a coordinator killed mid-run and resumed included."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from hive.cli import main
from hive.coordinator import Coordinator
from hive.coordinator.options import StartOptions
from hive.observe.audit import audit_run
from hive.observe.live import LiveState, Spent, panel_lines
from hive.records import Delivery, Dispute, GateDecision, Note, RunInfo
from hive.runs import RunPaths
from hive.store import write_json_atomic
from tests.hive_runs import (
    board,
    gates,
    load_info,
    ls,
    make_repo,
    only_run,
    publish_rules,
    report,
    transcript_entries,
    turn,
    write_judge,
    write_script,
)
from tests.test_live import when

BEES = ("bee-1", "bee-2")


def finished_run(root: Path) -> Path:
    script = write_script(root, {bee: [
        turn(f"FOUND: app/export.py:5 drops the final partial batch ({bee}).", ls()),
        turn("Reading the configuration next.", [{"name": "read", "args": {"path": "app/config.py"}}]),
        report(),
    ] for bee in BEES})
    opts = StartOptions(problem="Why does the export drop rows?", repo=make_repo(root), model=f"script:{script}",
                        bees=2, angles=("the batching", "the configuration"),
                        judge=(f"script:{write_judge(root, publish_rules())}",), runs_dir=root / "runs")
    asyncio.run(Coordinator(opts).run())
    return only_run(root / "runs")


def transcript_tokens(run_dir: Path, bee: str) -> int:
    return sum(int(e.data["input_tokens"]) + int(e.data["output_tokens"])
               for e in transcript_entries(run_dir, bee) if e.event == "usage" and e.data)


def recorded_tokens(info: RunInfo) -> dict[str, int]:
    return {b.id: int((b.model_extra or {})["input_tokens"]) + int((b.model_extra or {})["output_tokens"])
            for b in info.bees}


def as_left_by_a_kill(run_dir: Path) -> None:
    """``run.json`` as a coordinator killed with SIGKILL mid-run leaves it: last rewritten once the bees were
    planned (nothing spent yet), ``running`` under a process that is gone, while the bees' transcripts went on."""
    info = load_info(run_dir)
    gone = subprocess.Popen(["true"])
    gone.wait()
    write_json_atomic(run_dir / "run.json", info.model_copy(update={
        "status": "running", "ended_at": None, "exit_reason": None, "pid": gone.pid,
        "bees": [b.model_copy(update={"outcome": None, "reason": None, "input_tokens": 0, "output_tokens": 0,
                                      "utterances": 0}) for b in info.bees],
    }))


def test_a_coordinator_killed_mid_run_loses_no_bee_s_tokens_in_the_audit_or_over_a_resume(tmp_path: Path) -> None:
    run_dir = finished_run(tmp_path)
    spent = {bee: transcript_tokens(run_dir, bee) for bee in BEES}
    assert recorded_tokens(load_info(run_dir)) == spent and all(spent.values())
    as_left_by_a_kill(run_dir)

    audit = audit_run(RunPaths(run_dir))
    assert audit.status == "interrupted"
    assert {row.id: row.tokens for row in audit.bees} == spent  # the transcripts, not run.json's stale zeros

    assert main(["resume", str(run_dir), "--quiet"]) == 0
    after = {bee: transcript_tokens(run_dir, bee) for bee in BEES}
    assert all(after[bee] > spent[bee] for bee in BEES)  # the resumed bees called their model again
    assert recorded_tokens(load_info(run_dir)) == after
    assert {row.id: row.tokens for row in audit_run(RunPaths(run_dir)).bees} == after


def test_the_live_header_counts_the_judge_s_tokens_and_shows_a_cost_under_a_cent_as_the_audit_does() -> None:
    state = LiveState.from_info(RunInfo(id="r", problem="p", repo="/r"))
    state.apply(Spent(tokens=1200, cost_usd=0.00144))  # a planning call on a cheap model
    state.apply(GateDecision(id="g-000001", gate="publish", bee="bee-1", outcome="publish", source="judge",
                             tokens=300))  # an llm: judge tier
    header = "\n".join(line for line, _ in panel_lines(state, 200, when(1)))
    assert "1500 tokens · $0.0014" in header


def test_the_start_summary_names_what_the_coordinator_s_own_calls_spent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = write_script(tmp_path, {bee: [turn(f"Reading the export ({bee}).", ls()), report()] for bee in BEES})
    code = main(["start", "Why does the export drop rows?", "--repo", str(make_repo(tmp_path)), "--model",
                 f"script:{script}", "--bees", "2", "--judge", f"script:{write_judge(tmp_path, publish_rules())}",
                 "--runs-dir", str(tmp_path / "runs"), "--json"])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    own = load_info(only_run(tmp_path / "runs")).coordinator
    assert own is not None and own.calls == 2  # planning and the answer
    assert summary["coordinator"] == own.model_dump(mode="json", exclude_none=True)


def test_resume_s_warning_about_a_slow_model_asks_for_what_resume_can_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hive.cli.start import _check_model_timeout

    monkeypatch.setenv("HIVE_MODEL_TIMEOUT", "300")  # the run's --stall-timeout is the default, 300 s
    _check_model_timeout(300.0, ["openai-compat:local"], resuming=True)
    warning = capsys.readouterr().err.strip()
    assert "the run's --stall-timeout (300 s, kept from hive start)" in warning
    assert warning.endswith("lower HIVE_MODEL_TIMEOUT")  # hive resume has no --stall-timeout to raise
    # A run of script models makes no HTTP request: resuming it is not warned about.
    run_dir = finished_run(tmp_path)
    as_left_by_a_kill(run_dir)
    capsys.readouterr()
    assert main(["resume", str(run_dir), "--quiet"]) == 0
    assert "HIVE_MODEL_TIMEOUT" not in capsys.readouterr().err


def test_resume_s_summary_counts_the_whole_run_not_only_what_came_after_the_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run_dir = finished_run(tmp_path)
    as_left_by_a_kill(run_dir)
    notes_before = sum(isinstance(r, Note) for r in board(run_dir))
    assert notes_before and gates(run_dir)  # the stopped part of the run has something to count
    capsys.readouterr()
    assert main(["resume", str(run_dir), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    records, rows = board(run_dir), gates(run_dir)
    deliveries = [r for r in records if isinstance(r, Delivery)]
    assert summary["notes"] >= notes_before
    assert summary["utterances"] == sum(r.gate == "publish" for r in rows)
    assert summary["decisions"] == len(rows)
    assert (summary["notes"], summary["deliveries"], summary["corrections"], summary["disputes"]) == (
        sum(isinstance(r, Note) for r in records), len(deliveries), sum(d.how == "correction" for d in deliveries),
        sum(isinstance(r, Dispute) for r in records))
