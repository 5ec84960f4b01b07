"""Property-based test of the gate pipeline: whatever the interleaving of several bees' utterances, the board
it writes is consistent and nothing is lost or doubled.

The pipeline is the real one (its workers run concurrently on one event loop, one per bee), over the real
gates and judge engine with a scripted judge tier; the files are real JSON-lines files. Hypothesis chooses
what each bee says and in which order, and how often the loop yields between arrivals.
"""

from __future__ import annotations

import asyncio
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hive.board import fold
from hive.coordinator.pipeline import Pipeline
from hive.gates import Gates
from hive.judge.engine import Judge
from hive.judge.tiers.script import ScriptRule, ScriptTier
from hive.records import BOARD_ADAPTER, Delivery, GateDecision, InboxItem, Note, Relation, Utterance
from hive.store import JsonlWriter, read_all

BEES = ("bee-1", "bee-2", "bee-3")
TOPICS = ("batching loop", "timezone cutoff", "null emails", "retry budget")
SHAPES = (
    "FOUND: the {topic} in module {n} loses rows at step {n}.",
    "DEAD END: the {topic} in module {n} was checked and is not the cause.",
    "DECIDED: fix the {topic} first, in module {n}, before anything else.",
    "Routine progress: reading more of the {topic} code, nothing settled on it yet.",
    "FOUND: corrected: the {topic} in module {n} loses rows only on the final pass.",
    "FOUND: contrary to that, the {topic} in module {n} never loses any rows at all.",
)


def relation_probs(kind: str) -> dict[str, float]:
    probs = dict.fromkeys(("supersedes", "contradicts", "supports", "none"), 0.02)
    probs[kind] = 0.94
    return probs


RULES = [
    *(ScriptRule(gate="publish", when={"note": f"^{marker}"}, answers={"news": 0.95, "kind": {kind: 0.9}})
      for marker, kind in (("FOUND", "finding"), ("DEAD END", "dead_end"), ("DECIDED", "decision"))),
    ScriptRule(gate="publish", answers={"news": 0.05, "kind": {"other": 0.9}}),
    ScriptRule(gate="relate", when={"later": "corrected:"}, answers={"relation": relation_probs("supersedes")}),
    ScriptRule(gate="relate", when={"later": "contrary to that"}, answers={"relation": relation_probs("contradicts")}),
    ScriptRule(gate="relate", answers={"relation": relation_probs("supports")}),
    ScriptRule(gate="deliver", when={"focus": "angle of bee-2"}, answers={"useful": 0.95}),
    ScriptRule(gate="deliver", answers={"useful": 0.1}),
]


utterance_text = st.builds(
    lambda shape, topic, n: shape.format(topic=topic, n=n),
    st.sampled_from(SHAPES),
    st.sampled_from(TOPICS),
    st.integers(1, 3),
)
Event = tuple[str, str, str, int]
"""("say", bee, text, yields afterwards) or ("done", bee, "", 0): the bee has an outcome and says no more."""

events = st.lists(
    st.one_of(
        st.tuples(st.just("say"), st.sampled_from(BEES), utterance_text, st.integers(0, 3)),
        st.tuples(st.just("done"), st.sampled_from(BEES), st.just(""), st.just(0)),
    ),
    max_size=28,
)


async def settle(pipeline: Pipeline) -> None:
    """Let the workers handle everything queued (they never wait on anything but the event loop here)."""
    idle = 0
    while idle < 200:  # yields in a row with every queue empty: the last utterance has been handled
        idle = idle + 1 if all(slot.queue.empty() for slot in pipeline.bees.values()) else 0
        await asyncio.sleep(0)


async def run_pipeline(directory: Path, happened: list[Event], cap: int) -> tuple[list[tuple[str, str]], list[str]]:
    """Feed the events to a pipeline; return what it sent to bees and the ids of the utterances submitted."""
    sent: list[tuple[str, str]] = []
    said: list[str] = []

    async def send(bee: str, items: list[InboxItem]) -> None:
        await asyncio.sleep(0)  # a real send awaits the pipe; let other workers run meanwhile
        sent.extend((item.note, bee) for item in items)

    judge = Judge([ScriptTier(RULES)])
    gates = Gates(judge, goal="Why does the export drop rows?")
    with JsonlWriter(directory / "board.jsonl") as board, JsonlWriter(directory / "gate.jsonl") as gate_log:
        pipeline = Pipeline(gates, board, gate_log, send, delivery_cap=cap)
        for bee in BEES:
            pipeline.add_bee(bee, f"the angle of {bee}")
        async with asyncio.TaskGroup() as tasks:
            for bee in BEES:
                tasks.create_task(pipeline.worker(bee))
            seq: Counter[str] = Counter()
            for what, bee, text, pause in happened:
                if not pipeline.bees[bee].live:
                    continue
                if what == "done":
                    pipeline.bee_done(bee)
                    continue
                seq[bee] += 1
                utterance = Utterance(bee=bee, seq=seq[bee], text=text)
                said.append(utterance.uid)
                pipeline.submit(utterance)
                for _ in range(pause):
                    await asyncio.sleep(0)
            await settle(pipeline)
            for bee in BEES:
                if pipeline.bees[bee].live:
                    pipeline.bee_done(bee)
        await judge.aclose()
    return sent, said


@settings(max_examples=80, deadline=None)
@given(happened=events, cap=st.integers(0, 3))
def test_any_interleaving_of_bees_gives_a_consistent_board_with_nothing_lost_or_doubled(
    happened: list[Event], cap: int
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        sent, said = asyncio.run(run_pipeline(directory, happened, cap))
        records, board_warnings = read_all(directory / "board.jsonl", BOARD_ADAPTER)
        decisions, gate_warnings = read_all(directory / "gate.jsonl", GateDecision)
    assert not board_warnings and not gate_warnings

    # Exactly one publish decision per utterance; each published one is exactly one note, and vice versa.
    publish = [d for d in decisions if d.gate == "publish"]
    assert sorted(d.utterance or "" for d in publish) == sorted(said)
    notes = [r for r in records if isinstance(r, Note)]
    assert len({n.id for n in notes}) == len(notes)
    assert sorted(n.decision or "" for n in notes) == sorted(d.id for d in publish if d.outcome == "publish")
    assert len({d.id for d in decisions}) == len(decisions)

    # Each bee's notes keep the order the bee said them in.
    for bee in BEES:
        seqs = [int((n.utterance or "#0").split("#")[1]) for n in notes if n.bee == bee]
        assert seqs == sorted(seqs)

    # Relations point from a later note to an earlier one that exists; the fold is consistent.
    position = {n.id: i for i, n in enumerate(notes)}
    for relation in (r for r in records if isinstance(r, Relation)):
        assert position[relation.earlier] < position[relation.later]
    state = fold(records)
    standing = {n.id for n in state.standing()}
    assert standing | state.superseded.keys() == position.keys()
    assert not standing & state.superseded.keys()

    # What was sent is what the board says was delivered. A note reaches another bee at most once by
    # judge or rule (a conflict notice also goes back to its author); plain deliveries respect the cap.
    deliveries = [r for r in records if isinstance(r, Delivery)]
    assert Counter((d.note, d.to) for d in deliveries) == Counter(sent)
    authors = {n.id: n.bee for n in notes}
    routed = [(d.note, d.to) for d in deliveries if d.how in ("judge", "rule")]
    assert len(routed) == len(set(routed)) and all(authors[note] != to for note, to in routed)
    plain = Counter(d.to for d in deliveries if d.how == "judge")
    assert all(count <= cap for count in plain.values())
