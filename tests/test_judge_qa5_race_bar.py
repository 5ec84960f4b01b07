"""The race's stop bar (0.9) is part of its question: a cheap tier's 0.85 yes is unsure and escalates to the
next tier, as a cross-bee `supersedes` below 0.9 does, instead of settling the question and keeping the hive
going whatever the stronger tier would say."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hive.gates import ANSWERS, GATE_CONTRACT, Gates
from hive.judge.base import RawAnswer
from hive.judge.engine import Judge
from hive.judge.policy import to_answer
from hive.judge.questions import BooleanQuestion
from hive.judge.tiers.script import ScriptTier
from hive.records import Note

NOTE = Note(id="n-7", bee="bee-2", kind="finding", score=0.9, text="export.py:5 never yields the final partial batch")


def rules(tmp_path: Path, name: str, p: float) -> ScriptTier:
    path = tmp_path / name
    path.write_text(json.dumps([{"gate": "answer", "answers": {"answers": p}}]))
    return ScriptTier.from_file(path, contract=GATE_CONTRACT)


async def test_a_yes_below_the_race_bar_escalates_to_the_next_tier(tmp_path: Path) -> None:
    cheap, strong = rules(tmp_path, "cheap.json", 0.85), rules(tmp_path, "strong.json", 0.95)
    judge = Judge([cheap, strong])
    result = await Gates(judge, goal="why does the export drop rows").answer(NOTE)
    row = result.decision
    assert row is not None and result.answered
    assert [(call.tier, call.kept) for call in row.tiers] == [(cheap.id, []), (strong.id, ["answers"])]
    assert (row.source, row.outcome) == ("judge", "answered")


async def test_a_yes_below_the_race_bar_alone_is_unsure(tmp_path: Path) -> None:
    result = await Gates(Judge([rules(tmp_path, "cheap.json", 0.85)]), goal="why").answer(NOTE)
    row = result.decision
    assert row is not None and not result.answered
    assert row.answers["answers"].zone == "unsure" and (row.source, row.reason) == ("fallback", "unsure")


def test_the_bar_is_inclusive_and_checked() -> None:
    assert to_answer(ANSWERS, RawAnswer(p=0.9), "t").zone == "yes"
    assert to_answer(ANSWERS, RawAnswer(p=0.899), "t").zone == "unsure"
    with pytest.raises(ValueError, match="yes_at"):
        BooleanQuestion("q", "Is it?", yes_at=1.5)
