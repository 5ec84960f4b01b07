"""The pipeline's side of ``--race``: which notes are put to the ``answer`` gate, and when it stops asking."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hive.coordinator.pipeline import Pipeline
from hive.gates import Gates
from hive.judge.engine import Judge
from hive.judge.tiers.script import ScriptRule, ScriptTier
from hive.records import GateDecision, InboxItem, Utterance
from hive.store import JsonlWriter, read_all

MARKED = {"FOUND": "finding", "DEAD END": "dead_end", "DECIDED": "decision", "BLOCKED": "blocker"}


def rules(answers: dict[str, float]) -> list[ScriptRule]:
    """Publish what is marked, as marked; ``CONTRA`` contradicts across bees; ``answers`` by note text."""
    found: list[dict[str, Any]] = []
    for marker, kind in MARKED.items():
        probs = dict.fromkeys(("finding", "dead_end", "decision", "blocker", "other"), 0.02)
        probs[kind] = 0.92
        found.append({"gate": "publish", "when": {"note": f"^{marker}"}, "answers": {"news": 0.95, "kind": probs}})
    found.append({"gate": "relate", "when": {"later": "CONTRA"},
                  "answers": {"relation": {"contradicts": 0.95, "supersedes": 0.01, "supports": 0.02, "none": 0.02}}})
    found.append({"gate": "relate", "answers": {"relation": {"none": 0.97}}})
    found.append({"gate": "deliver", "answers": {"useful": 0.1}})
    found += [{"gate": "answer", "when": {"note": text}, "answers": {"answers": p}} for text, p in answers.items()]
    return [ScriptRule.model_validate(rule) for rule in found]


async def run(tmp_path: Path, said: list[tuple[str, str]], answers: dict[str, float], *, race: bool = True
              ) -> tuple[Pipeline, list[GateDecision]]:
    """Hand the utterances to a pipeline one at a time, in order; return it and its answer-gate rows."""

    async def send(bee: str, items: list[InboxItem]) -> None:
        return None

    judge = Judge([ScriptTier(rules(answers))])
    with JsonlWriter(tmp_path / "board.jsonl") as board, JsonlWriter(tmp_path / "gate.jsonl") as gate_log:
        pipeline = Pipeline(Gates(judge, goal="Why does the export drop rows?"), board, gate_log, send, race=race)
        for bee in ("bee-1", "bee-2"):
            pipeline.add_bee(bee, f"the angle of {bee}")
        for seq, (bee, text) in enumerate(said, 1):
            await pipeline.handle(Utterance(bee=bee, seq=seq, text=text))
    await judge.aclose()
    rows, _ = read_all(tmp_path / "gate.jsonl", GateDecision)
    return pipeline, [row for row in rows if row.gate == "answer"]


async def test_only_standing_undisputed_findings_and_decisions_are_asked(tmp_path: Path) -> None:
    pipeline, asked = await run(tmp_path, [
        ("bee-1", "DEAD END: the writer keeps every row it is given."),
        ("bee-1", "BLOCKED: the staging database cannot be reached from here."),
        ("bee-1", "FOUND: rows are lost in the batching loop of export.py."),
        ("bee-2", "FOUND: CONTRA rows are lost in the batching loop? No: the loop keeps them all."),
        ("bee-2", "DECIDED: the fix belongs in export.py:5, iterate up to len(rows)."),
    ], {"batching loop": 0.5, "export.py:5": 0.6})
    # the dead end and the blocker are not answers; bee-2's contradiction opened a dispute, so it is not asked
    assert [(row.note, row.kind, row.outcome) for row in asked] == [
        ("n-0003", "finding", "continue"), ("n-0005", "decision", "continue")]
    assert pipeline.answered is None


async def test_the_first_near_certain_answer_is_kept_and_nothing_more_is_asked(tmp_path: Path) -> None:
    pipeline, asked = await run(tmp_path, [
        ("bee-1", "FOUND: export.py:5 skips the final partial batch, which is where the rows go."),
        ("bee-2", "FOUND: export.py:5 leaves out the last batch whenever rows do not divide evenly."),
    ], {"export.py:5": 0.97})
    assert [(row.note, row.outcome, row.source) for row in asked] == [("n-0001", "answered", "judge")]
    assert pipeline.answered is not None and pipeline.answered.id == "n-0001"


async def test_without_race_the_answer_gate_is_never_asked(tmp_path: Path) -> None:
    pipeline, asked = await run(tmp_path, [("bee-1", "FOUND: export.py:5 skips the final partial batch.")],
                                {"export.py:5": 0.97}, race=False)
    assert asked == [] and pipeline.answered is None
