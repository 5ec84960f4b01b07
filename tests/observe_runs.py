"""A run directory whose every record is known, so that every audit figure can be checked by hand.

Three bees and a verifier. The story (ids are the records' own):

- publish: 8 utterances. g-01, g-02, g-07, g-08 published by the judge (n-1, n-2, n-4, n-5); g-05 published
  by the fallback on a ``DECIDED:`` marker after an unsure judge (n-3); g-03 withheld by the judge; g-06
  withheld by the fallback after a judge timeout; g-04 dropped as a duplicate of n-1.
- deliver: n-1 → bee-2 (judge, yes), n-1 → bee-3 (judge, no), n-2 → bee-1 (shadow: judged yes, skipped),
  n-3 (a decision) → bee-1 and bee-3 by rule, n-4 → bee-1 capped, n-4 → bee-2 (judge, yes).
- relate: n-2 contradicts n-1 (dispute d-2, never settled); n-4 contradicts n-1 (dispute d-1, a conflict
  notice to bee-1, verifier verify-1 spawned); n-4 vs n-2 unsure (supersedes at 0.85, below the 0.9 bar
  across bees); n-5 supersedes n-4 (d-1 resolved, a correction to bee-3); n-5 supports n-1.
- rules: one conflict notice, one correction, one verifier spawn, one withheld stale copy.
- usage: bee-1 in run.json (1000 + 200 tokens, $0.01), bee-2 in its transcript (350 + 120 tokens,
  $0.002), bee-3 none, verify-1 none.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from hive.records import (
    Answer,
    BeeInfo,
    BoardRecord,
    Delivery,
    Dispute,
    GateDecision,
    Note,
    Relation,
    Resolution,
    RunInfo,
    RunStatus,
    TierCall,
    TranscriptEntry,
    Verifier,
)
from hive.runs import RunPaths
from hive.store import JsonlWriter, write_json_atomic

RUN_ID = "20261130-030000-abcd"
T0 = "2026-11-30T03:00:"


def at(second: float) -> str:
    return f"{T0}{second:06.3f}Z"


def boolean(name: str, p: float, tier: str = "local") -> Answer:
    zone = "yes" if p >= 0.8 else "no" if p <= 0.2 else "unsure"
    return Answer(question=name, type="boolean", p=p, zone=zone, tier=tier)


def choice(name: str, pick: str, p: float, tier: str = "local") -> Answer:
    return Answer(
        question=name, type="choice", p=p, pick=pick, zone="picked" if p >= 0.6 else "unsure", tier=tier
    )


def decision(id: str, gate: str, second: float, outcome: str, source: str, **fields: Any) -> GateDecision:
    return GateDecision(id=id, gate=gate, at=at(second), outcome=outcome, source=source, **fields)


def run_info(status: RunStatus = "finished", pid: int | None = None) -> RunInfo:
    return RunInfo(
        id=RUN_ID,
        problem="Why does the nightly export drop rows?",
        repo="/src/export",
        bees=[
            BeeInfo(
                id="bee-1",
                angle="reproduce",
                model="m-small",
                outcome="reported",
                input_tokens=1000,
                output_tokens=200,
                cost_usd=0.01,
            ),
            BeeInfo(id="bee-2", angle="trace the code", model="m-small", outcome="reported"),
            BeeInfo(
                id="bee-3", angle="check the data", model="m-small", outcome="cut_short", reason="time limit"
            ),
            BeeInfo(
                id="verify-1",
                angle="settle d-1",
                role="verifier",
                model="m-small",
                outcome="reported",
                reason="settled",
            ),
        ],
        model="m-small",
        started_at=at(0),
        ended_at="2026-11-30T03:02:05.000Z" if status != "running" else None,
        status=status,
        pid=pid,
    )


NOTES = {
    "n-1": Note(
        id="n-1",
        bee="bee-1",
        kind="finding",
        score=0.95,
        at=at(1),
        text="FOUND: the export reads 1003 rows and writes 1000.",
        utterance="bee-1#1",
        decision="g-01",
    ),
    "n-2": Note(
        id="n-2",
        bee="bee-2",
        kind="finding",
        score=0.85,
        at=at(2),
        text="FOUND: the export writes all 1003 rows\nwhen run by hand.",
        utterance="bee-2#1",
        decision="g-02",
    ),
    "n-3": Note(
        id="n-3",
        bee="bee-2",
        kind="decision",
        score=0.5,
        at=at(4),
        text="DECIDED: the fix goes in batches().",
        utterance="bee-2#2",
        decision="g-05",
    ),
    "n-4": Note(
        id="n-4",
        bee="bee-3",
        kind="finding",
        score=0.81,
        at=at(7),
        text="FOUND: rows with a NULL email are dropped.",
        utterance="bee-3#3",
        decision="g-07",
    ),
    "n-5": Note(
        id="n-5",
        bee="verify-1",
        kind="finding",
        score=0.99,
        at=at(11),
        text="FOUND: NULL emails are written; the last partial batch is lost.",
        utterance="verify-1#1",
        decision="g-08",
    ),
}


def board_records() -> list[BoardRecord]:
    n = NOTES
    return [
        n["n-1"],
        n["n-2"],
        Delivery(note="n-1", to="bee-2", how="judge", at=at(2.5)),
        Relation(later="n-2", earlier="n-1", relation="contradicts", score=0.75, at=at(3), decision="g-27"),
        Dispute(id="d-2", notes=("n-1", "n-2"), at=at(3)),
        n["n-3"],
        Delivery(note="n-3", to="bee-1", how="rule", at=at(5)),
        Delivery(note="n-3", to="bee-3", how="rule", at=at(5)),
        n["n-4"],
        Relation(later="n-4", earlier="n-1", relation="contradicts", score=0.7, at=at(8), decision="g-20"),
        Dispute(id="d-1", notes=("n-1", "n-4"), at=at(8)),
        Delivery(note="n-4", to="bee-1", how="conflict", replaces="n-1", at=at(8.5)),
        Delivery(note="n-4", to="bee-2", how="judge", at=at(9)),
        Verifier(bee="verify-1", dispute="d-1", notes=("n-1", "n-4"), at=at(10)),
        n["n-5"],
        Relation(later="n-5", earlier="n-4", relation="supersedes", score=0.93, at=at(12), decision="g-23"),
        Resolution(dispute="d-1", superseded="n-4", by="n-5", at=at(12)),
        Delivery(note="n-5", to="bee-3", how="correction", replaces="n-4", at=at(12.5)),
        Relation(later="n-5", earlier="n-1", relation="supports", score=0.9, at=at(13), decision="g-25"),
    ]


def gate_decisions() -> list[GateDecision]:
    """In the order the coordinator appends them: by time."""
    d = decision
    decisions = [
        d(
            "g-01",
            "publish",
            1,
            "publish",
            "judge",
            bee="bee-1",
            utterance="bee-1#1",
            kind="finding",
            score=0.95,
            text=NOTES["n-1"].text,
            answers={"news": boolean("news", 0.95), "kind": choice("kind", "finding", 0.9)},
            tiers=[
                TierCall(
                    tier="local", asked=["news", "kind"], kept=["news", "kind"], latency_ms=100, tokens=10
                )
            ],
            latency_ms=100,
            tokens=10,
        ),
        d(
            "g-02",
            "publish",
            2,
            "publish",
            "judge",
            bee="bee-2",
            utterance="bee-2#1",
            kind="finding",
            score=0.85,
            text=NOTES["n-2"].text,
            answers={"news": boolean("news", 0.85), "kind": choice("kind", "finding", 0.7)},
            latency_ms=200,
            tokens=20,
        ),
        d(
            "g-03",
            "publish",
            2.2,
            "withhold",
            "judge",
            bee="bee-3",
            utterance="bee-3#1",
            text="Looking at the config next.",
            answers={"news": boolean("news", 0.1), "kind": choice("kind", "other", 0.8)},
            latency_ms=300,
            tokens=30,
        ),
        d(
            "g-04",
            "publish",
            2.4,
            "duplicate",
            "rule",
            bee="bee-3",
            utterance="bee-3#2",
            note="n-1",
            reason="duplicate of n-1",
            text="FOUND: the export reads 1003 rows and writes 1000 rows.",
        ),
        d(
            "g-05",
            "publish",
            4,
            "publish",
            "fallback",
            reason="unsure",
            bee="bee-2",
            utterance="bee-2#2",
            kind="decision",
            score=0.5,
            text=NOTES["n-3"].text,
            answers={"news": boolean("news", 0.5), "kind": choice("kind", "decision", 0.65)},
            latency_ms=400,
        ),
        d(
            "g-06",
            "publish",
            4.5,
            "withhold",
            "fallback",
            reason="error:timeout",
            bee="bee-1",
            utterance="bee-1#2",
            text="Running the test suite now to see what fails.",
            tiers=[TierCall(tier="llm:m-judge", asked=["news", "kind"], latency_ms=1000, error="timeout")],
            latency_ms=1000,
        ),
        d(
            "g-07",
            "publish",
            7,
            "publish",
            "judge",
            bee="bee-3",
            utterance="bee-3#3",
            kind="finding",
            score=0.81,
            text=NOTES["n-4"].text,
            answers={"news": boolean("news", 0.81), "kind": choice("kind", "finding", 0.95)},
            latency_ms=500,
        ),
        d(
            "g-08",
            "publish",
            11,
            "publish",
            "judge",
            bee="verify-1",
            utterance="verify-1#1",
            kind="finding",
            score=0.99,
            text=NOTES["n-5"].text,
            answers={
                "news": boolean("news", 0.99, tier="llm:m-judge"),
                "kind": choice("kind", "finding", 0.99),
            },
            latency_ms=600,
        ),
        d(
            "g-10",
            "deliver",
            2.5,
            "deliver",
            "judge",
            note="n-1",
            to="bee-2",
            bee="bee-1",
            kind="finding",
            score=0.9,
            answers={"useful": boolean("useful", 0.9)},
            latency_ms=10,
        ),
        d(
            "g-11",
            "deliver",
            2.5,
            "skip",
            "judge",
            note="n-1",
            to="bee-3",
            bee="bee-1",
            kind="finding",
            score=0.15,
            answers={"useful": boolean("useful", 0.15)},
            latency_ms=20,
        ),
        d(
            "g-12",
            "deliver",
            2.6,
            "skip",
            "shadow",
            reason="shadow",
            verdict="deliver",
            note="n-2",
            to="bee-1",
            bee="bee-2",
            kind="finding",
            score=0.85,
            answers={"useful": boolean("useful", 0.85)},
            latency_ms=30,
        ),
        d(
            "g-13",
            "deliver",
            5,
            "deliver",
            "rule",
            reason="every bee gets a decision",
            note="n-3",
            to="bee-1",
            bee="bee-2",
            kind="decision",
        ),
        d(
            "g-14",
            "deliver",
            5,
            "deliver",
            "rule",
            reason="every bee gets a decision",
            note="n-3",
            to="bee-3",
            bee="bee-2",
            kind="decision",
        ),
        d(
            "g-15",
            "deliver",
            8.2,
            "capped",
            "rule",
            reason="bee-1 already received 10 notes",
            note="n-4",
            to="bee-1",
            bee="bee-3",
        ),
        d(
            "g-16",
            "deliver",
            9,
            "deliver",
            "judge",
            note="n-4",
            to="bee-2",
            bee="bee-3",
            kind="finding",
            score=0.82,
            answers={"useful": boolean("useful", 0.82)},
            latency_ms=40,
        ),
        d(
            "g-27",
            "relate",
            3,
            "contradicts",
            "judge",
            later="n-2",
            earlier="n-1",
            bee="bee-2",
            score=0.75,
            answers={"relation": choice("relation", "contradicts", 0.75, tier="llm:m-judge")},
            latency_ms=50,
        ),
        d(
            "g-20",
            "relate",
            8,
            "contradicts",
            "judge",
            later="n-4",
            earlier="n-1",
            bee="bee-3",
            score=0.7,
            answers={"relation": choice("relation", "contradicts", 0.7, tier="llm:m-judge")},
            latency_ms=60,
        ),
        d(
            "g-21",
            "conflict",
            8.5,
            "deliver",
            "rule",
            note="n-4",
            to="bee-1",
            later="n-4",
            earlier="n-1",
            dispute="d-1",
            reason="n-4 contradicts n-1",
        ),
        d(
            "g-22",
            "relate",
            8.1,
            "none",
            "fallback",
            reason="unsure",
            later="n-4",
            earlier="n-2",
            bee="bee-3",
            answers={"relation": choice("relation", "supersedes", 0.85, tier="llm:m-judge")},
            latency_ms=70,
        ),
        d("g-26", "verify", 10, "spawn", "rule", bee="verify-1", dispute="d-1", earlier="n-1", later="n-4"),
        d(
            "g-23",
            "relate",
            12,
            "supersedes",
            "judge",
            later="n-5",
            earlier="n-4",
            bee="verify-1",
            score=0.93,
            answers={"relation": choice("relation", "supersedes", 0.93, tier="llm:m-judge")},
            latency_ms=80,
        ),
        d(
            "g-24",
            "correct",
            12.5,
            "deliver",
            "rule",
            note="n-5",
            to="bee-3",
            later="n-5",
            earlier="n-4",
            reason="n-5 supersedes n-4",
        ),
        d(
            "g-25",
            "relate",
            13,
            "supports",
            "judge",
            later="n-5",
            earlier="n-1",
            bee="verify-1",
            score=0.9,
            answers={"relation": choice("relation", "supports", 0.9, tier="llm:m-judge")},
            latency_ms=90,
        ),
        d("g-28", "withheld", 13.5, "withheld", "rule", note="n-4", to="bee-3", reason="superseded by n-5"),
    ]
    return sorted(decisions, key=lambda decision: decision.at)


def transcript_bee_2() -> list[TranscriptEntry]:
    return [
        TranscriptEntry(at=at(1), event="message", role="user", content="Your angle: trace the code"),
        TranscriptEntry(at=at(1.5), event="usage", data={"input_tokens": 300, "output_tokens": 100}),
        TranscriptEntry(
            at=at(3), event="usage", data={"input_tokens": 50, "output_tokens": 20, "cost_usd": 0.002}
        ),
    ]


def write_run(runs_dir: Path, *, status: RunStatus = "finished", pid: int | None = None) -> RunPaths:
    """The known run, written the way the coordinator writes it."""
    paths = RunPaths(runs_dir / RUN_ID)
    paths.dir.mkdir(parents=True)
    write_json_atomic(paths.run_json, run_info(status, pid))
    for path, records in (
        (paths.board, board_records()),
        (paths.gate, gate_decisions()),
        (paths.transcript("bee-2"), transcript_bee_2()),
    ):
        with JsonlWriter(path) as writer:
            for record in records:
                writer.append(record)
    return paths


class _GoneBytes(io.BytesIO):
    def write(self, data: Any) -> int:
        raise BrokenPipeError(32, "Broken pipe")


class GoneReader(io.StringIO):
    """A stdout whose reader has gone (``| head -1``): every write fails as a closed pipe's does."""

    buffer = _GoneBytes()

    def write(self, text: str) -> int:
        raise BrokenPipeError(32, "Broken pipe")
