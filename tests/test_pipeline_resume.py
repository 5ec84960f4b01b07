"""The pipeline taking up a stopped run's board (``hive resume``): state, holdings, caps and ids go on."""

from __future__ import annotations

from pathlib import Path

from hive.board import fold
from hive.coordinator.pipeline import Pipeline, missed_notices
from hive.coordinator.resume import unjudged_utterances, unread_items
from hive.gates import Gates, sequential_ids
from hive.judge.engine import Judge
from hive.judge.tiers.script import ScriptRule, ScriptTier
from hive.records import (
    BOARD_ADAPTER,
    BoardRecord,
    Delivery,
    Dispute,
    GateDecision,
    InboxItem,
    Note,
    Relation,
    TranscriptEntry,
    Utterance,
)
from hive.store import JsonlWriter, read_all


def earlier_board() -> list[BoardRecord]:
    return [
        Note(id="n-0001", bee="bee-1", kind="finding", text="FOUND: export.py:5 skips the last batch.", score=0.9),
        Delivery(note="n-0001", to="bee-2", how="judge"),
        Note(id="n-0002", bee="bee-3", kind="finding", text="FOUND: the writer drops rows on retry.", score=0.9),
        Relation(later="n-0002", earlier="n-0001", relation="contradicts", score=0.95, same_bee=False),
        Dispute(id="d-1", notes=("n-0001", "n-0002"), at="2026-11-30T09:00:00.000Z"),
        Delivery(note="n-0002", to="bee-1", how="conflict", replaces="n-0001"),
        Note(id="n-0010", bee="bee-2", kind="decision", text="DECIDED: fix the loop bound in export.py.", score=0.9),
        Delivery(note="n-0010", to="bee-1", how="rule"),
    ]


async def test_a_restored_pipeline_goes_on_where_the_board_stopped(tmp_path: Path) -> None:
    sent: list[tuple[str, str]] = []

    async def send(bee: str, items: list[InboxItem]) -> None:
        sent.extend((bee, item.note) for item in items)

    rules = [ScriptRule.model_validate(r) for r in (
        {"gate": "publish", "answers": {"news": 0.95, "kind": {"finding": 0.9, "other": 0.02}}},
        {"gate": "relate", "answers": {"relation": {"none": 0.97}}},
        {"gate": "deliver", "answers": {"useful": 0.95}},
    )]
    judge = Judge([ScriptTier(rules)])
    with JsonlWriter(tmp_path / "board.jsonl") as board, JsonlWriter(tmp_path / "gate.jsonl") as gate_log:
        gates = Gates(judge, goal="Why does the export drop rows?", new_id=sequential_ids(["g-000007", "g-000041"]))
        pipeline = Pipeline(gates, board, gate_log, send, delivery_cap=1)
        for bee in ("bee-1", "bee-2", "bee-3"):
            pipeline.add_bee(bee, f"the angle of {bee}")
        pipeline.bees["bee-3"].live = False  # it had reported: nothing more goes to it
        pipeline.restore(earlier_board(), answered="n-0010")

        assert pipeline.bees["bee-1"].holds == {"n-0001", "n-0002", "n-0010"}
        assert pipeline.bees["bee-2"].holds == {"n-0001", "n-0010"}
        assert pipeline.bees["bee-2"].plain_deliveries == 1
        assert [d.id for d in pipeline.state.open_disputes()] == ["d-1"]
        assert pipeline.answered is not None and pipeline.answered.id == "n-0010"

        await pipeline.handle(Utterance(bee="bee-1", seq=9, text="FOUND: the last batch is lost when rows % 250 != 0."))
    await judge.aclose()

    new_notes = [r for r in read_all(tmp_path / "board.jsonl", BOARD_ADAPTER)[0] if isinstance(r, Note)]
    assert [n.id for n in new_notes] == ["n-0011"]
    rows, _ = read_all(tmp_path / "gate.jsonl", GateDecision)
    assert rows[0].id == "g-000042" and len({r.id for r in rows}) == len(rows)
    # bee-2 had used its one judged delivery before the stop: the new note is capped for it, and bee-3 is done.
    assert sent == []
    assert [(r.gate, r.outcome, r.to) for r in rows if r.gate == "deliver"] == [("deliver", "capped", "bee-2")]


def test_ids_continue_past_the_highest_written() -> None:
    new_id = sequential_ids(["g-000003", "g-000120", "not-an-id", "g-x"])
    assert [new_id(), new_id()] == ["g-000121", "g-000122"]
    assert sequential_ids()() == "g-000001"


def test_what_a_bee_never_read_is_handed_over_again() -> None:
    board: list[BoardRecord] = [
        Note(id="n-0001", bee="bee-1", kind="finding", text="FOUND: export.py:5 skips the last batch.", score=0.9),
        Delivery(note="n-0001", to="bee-2", how="judge"),
        Note(id="n-0002", bee="bee-1", kind="finding", text="FOUND: export.py:5 skips the last 3 rows.", score=0.9),
        Delivery(note="n-0002", to="bee-2", how="correction", replaces="n-0001"),
        Note(id="n-0003", bee="bee-3", kind="decision", text="DECIDED: fix the loop bound.", score=0.9),
        Delivery(note="n-0003", to="bee-2", how="rule"),
        Delivery(note="n-0003", to="bee-1", how="rule"),
    ]
    transcript = [TranscriptEntry(event="notes", data={"delivered": ["n-0001"], "withheld": []})]
    assert unread_items("bee-2", board, transcript) == [
        InboxItem(kind="correction", note="n-0002", bee="bee-1", note_kind="finding",
                  text="FOUND: export.py:5 skips the last 3 rows.", replaces="n-0001", other_bee="bee-1",
                  other_text="FOUND: export.py:5 skips the last batch."),
        InboxItem(kind="note", note="n-0003", bee="bee-3", note_kind="decision", text="DECIDED: fix the loop bound."),
    ]
    assert unread_items("bee-1", board, [TranscriptEntry(event="notes", data={"withheld": ["n-0003"]})]) == []


def stopped_bee_board() -> list[BoardRecord]:
    """bee-1 posted n-0001 and was handed n-0002, then stopped; meanwhile bee-2 superseded n-0001 (and was
    superseded in turn by bee-3), and bee-3 contradicted n-0002. bee-1 heard of none of it."""
    return [
        Note(id="n-0001", bee="bee-1", kind="finding", text="FOUND: export.py:5 skips the last batch.", score=0.9),
        Note(id="n-0002", bee="bee-2", kind="finding", text="FOUND: the writer flushes every 250 rows.", score=0.9),
        Delivery(note="n-0002", to="bee-1", how="judge"),
        Note(id="n-0003", bee="bee-2", kind="finding", text="FOUND: export.py:5 skips the last 3 rows.", score=0.9),
        Relation(later="n-0003", earlier="n-0001", relation="supersedes", score=0.95),
        Note(id="n-0004", bee="bee-3", kind="finding", text="FOUND: export.py:5 skips rows % 250.", score=0.9),
        Relation(later="n-0004", earlier="n-0003", relation="supersedes", score=0.95),
        Delivery(note="n-0004", to="bee-2", how="correction", replaces="n-0003"),
        Note(id="n-0005", bee="bee-3", kind="finding", text="FOUND: the writer never flushes.", score=0.9),
        Relation(later="n-0005", earlier="n-0002", relation="contradicts", score=0.9),
        Dispute(id="d-1", notes=("n-0002", "n-0005"), at="2026-11-30T09:00:00.000Z"),
        Delivery(note="n-0005", to="bee-2", how="conflict", replaces="n-0002"),
    ]


def test_a_stopped_bee_is_owed_the_corrections_and_conflict_notices_it_missed() -> None:
    board = stopped_bee_board()
    state = fold(board)
    owed = [(m.delivery.how, m.delivery.note, m.delivery.replaces, m.dispute) for m in
            missed_notices("bee-1", board, state)]
    # A chain of corrections in board order, then the dispute over a note it was handed, carrying the new side.
    assert owed == [("correction", "n-0003", "n-0001", None), ("correction", "n-0004", "n-0003", None),
                    ("conflict", "n-0005", "n-0002", "d-1")]
    # bee-2 was live throughout: it had its conflict notice, and the bee that supersedes is never corrected.
    assert missed_notices("bee-2", board, state) == []
    # A bee that holds none of these notes is owed nothing.
    assert missed_notices("bee-4", board, state) == []


def test_a_notice_already_handed_over_is_not_owed_again() -> None:
    board = [*stopped_bee_board(),
             Delivery(note="n-0003", to="bee-1", how="correction", replaces="n-0001"),
             Delivery(note="n-0005", to="bee-1", how="conflict", replaces="n-0002")]
    owed = missed_notices("bee-1", board, fold(board))
    assert [(m.delivery.note, m.delivery.replaces) for m in owed] == [("n-0004", "n-0003")]


async def test_a_restarted_bee_catches_up_with_records_as_if_it_had_been_live(tmp_path: Path) -> None:
    async def send(bee: str, items: list[InboxItem]) -> None:
        raise AssertionError("a catch-up goes to the bee's first inbox, not through send")

    judge = Judge([ScriptTier([])])
    with JsonlWriter(tmp_path / "board.jsonl") as board, JsonlWriter(tmp_path / "gate.jsonl") as gate_log:
        pipeline = Pipeline(Gates(judge, goal="Why does the export drop rows?"), board, gate_log, send)
        for bee in ("bee-1", "bee-2", "bee-3"):
            pipeline.add_bee(bee, f"the angle of {bee}")
        pipeline.restore(stopped_bee_board())
        items = pipeline.catch_up("bee-1", stopped_bee_board())
        assert pipeline.catch_up("bee-2", stopped_bee_board()) == []
    await judge.aclose()

    assert [(i.kind, i.note, i.replaces, i.other_bee) for i in items] == [
        ("correction", "n-0003", "n-0001", "bee-1"), ("correction", "n-0004", "n-0003", "bee-2"),
        ("conflict", "n-0005", "n-0002", "bee-2")]
    assert pipeline.bees["bee-1"].holds >= {"n-0001", "n-0002", "n-0003", "n-0004", "n-0005"}
    written = read_all(tmp_path / "board.jsonl", BOARD_ADAPTER)[0]
    assert [(r.note, r.to, r.how) for r in written if isinstance(r, Delivery)] == [
        ("n-0003", "bee-1", "correction"), ("n-0004", "bee-1", "correction"), ("n-0005", "bee-1", "conflict")]
    rows, _ = read_all(tmp_path / "gate.jsonl", GateDecision)
    assert [(r.gate, r.outcome, r.to, r.dispute) for r in rows] == [
        ("correct", "deliver", "bee-1", None), ("correct", "deliver", "bee-1", None),
        ("conflict", "deliver", "bee-1", "d-1")]
    assert rows[2].reason == "n-0005 contradicts n-0002 (missed while bee-1 was stopped)"
    # Caught up once: a second look owes nothing.
    assert missed_notices("bee-1", [*stopped_bee_board(), *written], pipeline.state) == []


def test_utterances_the_ledger_has_no_publish_row_for_are_left_to_judge() -> None:
    entries = [
        TranscriptEntry(event="reply", role="assistant", content="FOUND: a. FOUND: b."),
        TranscriptEntry(event="utterance", content="FOUND: a.", data={"seq": 1}),
        TranscriptEntry(event="utterance", content="FOUND: b.", data={"seq": 2}),
        TranscriptEntry(event="utterance", content="Now the writer.", data={"seq": 3}),
        TranscriptEntry(event="utterance", content="no number", data={}),  # not one the bee wrote: skipped
    ]
    left = unjudged_utterances("bee-1", entries, judged={"bee-1#1", "bee-2#2"})
    assert [(u.uid, u.text) for u in left] == [("bee-1#2", "FOUND: b."), ("bee-1#3", "Now the writer.")]
    assert unjudged_utterances("bee-1", entries, judged={"bee-1#1", "bee-1#2", "bee-1#3"}) == []
