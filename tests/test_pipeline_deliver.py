"""Which bees the pipeline delivers to: only bees still working, never one that has handed in its report."""

from __future__ import annotations

from pathlib import Path

from hive.coordinator.pipeline import Pipeline
from hive.gates import Gates
from hive.judge.engine import Judge
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
