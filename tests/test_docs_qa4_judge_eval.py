"""`hive judge eval` reports the model's loading apart (`load_ms`, "after N ms loading"), as docs/judge.md says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_judge_cli import LoadingTier

from hive.cli import main


def test_eval_loads_the_judge_once_inside_the_load_it_reports(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The command loaded the model before `evaluate` could time it, so `load_ms` read ~0 ms (0.6 ms for a
    local model that takes 700 ms to load): the load happens once, where `load_ms` measures it."""
    tier = LoadingTier()
    monkeypatch.setattr("hive.judge.tiers.build_tiers", lambda specs: [tier])
    items = tmp_path / "publish.jsonl"
    items.write_text(json.dumps({"text": "Let me open writer.py and look at flush() next.", "kind": "routine",
                                 "news": False}) + "\n")
    assert main(["judge", "eval", str(items), "--gate", "publish", "--json"]) == 0
    assert tier.events == ["load", "answer"]
    assert json.loads(capsys.readouterr().out)["load_ms"] >= 0
