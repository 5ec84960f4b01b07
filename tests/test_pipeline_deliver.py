"""Which bees the pipeline delivers to: only bees still working, never one that has handed in its report."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hive.coordinator.pipeline import Pipeline
from hive.gates import Gates
from hive.judge.base import TierResult
from hive.judge.engine import Judge
from hive.judge.questions import Question
from hive.judge.tiers.script import ScriptRule, ScriptTier
from hive.records import GateDecision, InboxItem, Utterance
from hive.store import JsonlWriter, read_all

RULES = [
    {"gate": "publish", "answers": {"news": 0.95, "kind": {"finding": 0.92}}},
    {"gate": "deliver", "answers": {"useful": 0.95}},
]


async def test_a_bee_that_reported_gets_nothing_more_while_its_process_exits(tmp_path: Path) -> None:
    sent: dict[str, list[str]] = {}

    async def send(bee: str, items: list[InboxItem]) -> None:
        sent.setdefault(bee, []).extend(item.note for item in items)

    judge = Judge([ScriptTier([ScriptRule.model_validate(rule) for rule in RULES])])
    with JsonlWriter(tmp_path / "board.jsonl") as board, JsonlWriter(tmp_path / "gate.jsonl") as gate_log:
        pipeline = Pipeline(Gates(judge, goal="Why does the export drop rows?"), board, gate_log, send)
        for bee in ("bee-1", "bee-2", "bee-3"):
            pipeline.add_bee(bee, f"the angle of {bee}")
        pipeline.stop_delivering("bee-3")  # its report arrived; the process has not exited yet
        await pipeline.handle(Utterance(bee="bee-1", seq=1, text="FOUND: export.py:5 drops the last batch."))
    await judge.aclose()
    rows, _ = read_all(tmp_path / "gate.jsonl", GateDecision)
    assert [(r.gate, r.to) for r in rows if r.gate == "deliver"] == [("deliver", "bee-2")]
    assert sent == {"bee-2": ["n-0001"]}


class SlowTier(ScriptTier):
    """A script tier that takes a moment, as a real judge does, so that two bees' utterances are judged at once."""

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        await asyncio.sleep(0.05)
        return await super().answer(gate, questions, state)


async def test_two_bees_saying_the_same_thing_at_once_make_one_note(tmp_path: Path) -> None:
    async def send(bee: str, items: list[InboxItem]) -> None:
        return None

    rules = [ScriptRule.model_validate(r) for r in (
        {"gate": "publish", "answers": {"news": 0.95, "kind": {"finding": 0.9, "other": 0.02}}},
        {"gate": "relate", "answers": {"relation": {"none": 0.97}}},
        {"gate": "deliver", "answers": {"useful": 0.1}},
    )]
    judge = Judge([SlowTier(rules)])
    text = "FOUND: export.py:5 skips the last partial batch of rows."
    with JsonlWriter(tmp_path / "board.jsonl") as board, JsonlWriter(tmp_path / "gate.jsonl") as gate_log:
        pipeline = Pipeline(Gates(judge, goal="Why does the export drop rows?"), board, gate_log, send)
        for bee in ("bee-1", "bee-2"):
            pipeline.add_bee(bee, f"the angle of {bee}")
        await asyncio.gather(*(pipeline.handle(Utterance(bee=bee, seq=1, text=text)) for bee in ("bee-1", "bee-2")))
    await judge.aclose()

    assert [n.id for n in pipeline.state.notes.values()] == ["n-0001"]
    rows = [r for r in read_all(tmp_path / "gate.jsonl", GateDecision)[0] if r.gate == "publish"]
    assert sorted(r.outcome for r in rows) == ["duplicate", "publish"]
    late = next(r for r in rows if r.outcome == "duplicate")
    assert (late.source, late.note, late.verdict, late.reason) == (
        "rule", "n-0001", "publish", "duplicate of n-0001, published while judged")
    assert late.answers["news"].p == 0.95  # what the judge said stays in the row
