"""`hive demo`, the README's first command: a whole hive offline, end to end, in real processes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hive.cli import main
from hive.records import Dispute, Resolution, Verifier
from tests.hive_runs import board, gates, load_info, run_hive


@pytest.mark.slow
def test_the_demo_runs_every_mechanism_offline(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    done = run_hive(["demo", "--plain", "--runs-dir", str(runs)], cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    run_dir = next(runs.iterdir())
    info = load_info(run_dir)
    assert info.status == "finished" and info.judge[0] == "local"
    assert all(b.outcome == "reported" for b in info.bees)
    records = board(run_dir)
    assert [r for r in records if isinstance(r, Dispute)] and [r for r in records if isinstance(r, Resolution)]
    assert [r.bee for r in records if isinstance(r, Verifier)] == ["verify-1"]
    rows = gates(run_dir)
    publish = [r for r in rows if r.gate == "publish"]
    assert {r.outcome for r in publish} >= {"publish", "withhold"}
    assert any(r.gate == "deliver" and r.source == "judge" for r in rows)  # the local judge at work
    # The plain lines show the mechanisms as they happen, and the audit follows the answer.
    for shown in (" withheld bee-", "note n-", "delivered", "dispute d-1 opened", "verifier verify-1 spawned",
                  "resolved", "$ hive audit latest"):
        assert shown in done.stdout, shown
    assert (run_dir / "answer.md").read_text().startswith("# Why does the nightly export drop rows?")


@pytest.mark.slow
def test_the_demo_summary_is_json(tmp_path: Path) -> None:
    done = run_hive(["demo", "--json", "--runs-dir", str(tmp_path / "runs")], cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["status"] == "finished" and summary["verifiers"] == 1 and summary["notes"] > 0


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf"])
def test_the_demo_refuses_a_dispute_timeout_that_is_not_a_positive_number(
    tmp_path: Path, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["demo", "--dispute-timeout", value, "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "--dispute-timeout must be a positive number" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()
