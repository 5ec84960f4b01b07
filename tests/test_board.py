"""The board fold: what stands, what was corrected, what is in dispute, who confirmed what."""

from __future__ import annotations

from hive.board import BoardState, fold
from hive.records import Delivery, Dispute, Note, NoteKind, Relation, RelationKind, Resolution, Verifier

AT = "2026-11-30T03:04:05.123Z"


def note(nid: str, bee: str, kind: NoteKind = "finding") -> Note:
    return Note(id=nid, bee=bee, kind=kind, text=f"{bee} says {nid}", score=0.8, at=AT)


def rel(later: str, earlier: str, relation: RelationKind) -> Relation:
    return Relation(later=later, earlier=earlier, relation=relation, score=0.7, at=AT)


def ids(notes: list[Note]) -> list[str]:
    return [n.id for n in notes]


def test_an_empty_board_folds_to_an_empty_state() -> None:
    state = fold([])
    assert state.standing() == [] and state.contested() == [] and state.open_disputes() == []
    assert state.confirmations("n1") == 0


def test_notes_stand_in_board_order() -> None:
    state = fold([note("n2", "bee-2"), note("n1", "bee-1"), note("n3", "bee-1", "decision")])
    assert ids(state.standing()) == ["n2", "n1", "n3"]


def test_a_superseded_note_leaves_the_standing_set_and_records_by_which() -> None:
    state = fold(
        [note("n1", "bee-1"), note("n2", "bee-2"), note("n3", "bee-1"), rel("n3", "n1", "supersedes")]
    )
    assert ids(state.standing()) == ["n2", "n3"]
    assert state.superseded == {"n1": "n3"}
    assert "n1" in state.notes  # never removed from the record, only from what stands


def test_a_bee_may_supersede_its_own_note_and_another_bees() -> None:
    state = fold(
        [
            note("n1", "bee-1"),
            note("n2", "bee-1"),
            note("n3", "bee-2"),
            rel("n2", "n1", "supersedes"),
            rel("n3", "n2", "supersedes"),
        ]
    )
    assert ids(state.standing()) == ["n3"]
    assert state.superseded == {"n1": "n2", "n2": "n3"}


def test_the_first_supersede_of_a_note_is_the_one_kept() -> None:
    state = fold(
        [
            note("n1", "bee-1"),
            note("n2", "bee-2"),
            note("n3", "bee-3"),
            rel("n2", "n1", "supersedes"),
            rel("n3", "n1", "supersedes"),
        ]
    )
    assert state.superseded == {"n1": "n2"}


def test_contradicting_notes_of_two_bees_are_a_contested_pair() -> None:
    state = fold([note("n1", "bee-1"), note("n2", "bee-2"), rel("n2", "n1", "contradicts")])
    assert state.contested() == [("n1", "n2")]
    assert state.contested_ids() == {"n1", "n2"}
    assert ids(state.standing()) == ["n1", "n2"]  # both stay on the board


def test_a_bee_contradicting_itself_is_not_a_dispute() -> None:
    state = fold([note("n1", "bee-1"), note("n2", "bee-1"), rel("n2", "n1", "contradicts")])
    assert state.contested() == []
    assert len(state.relations) == 1


def test_the_same_contradiction_twice_is_one_contested_pair() -> None:
    records = [note("n1", "bee-1"), note("n2", "bee-2"), rel("n2", "n1", "contradicts")]
    state = fold([*records, rel("n2", "n1", "contradicts")])
    assert state.contested() == [("n1", "n2")]


def test_superseding_either_side_ends_the_contest() -> None:
    base = [note("n1", "bee-1"), note("n2", "bee-2"), rel("n2", "n1", "contradicts"), note("n3", "bee-3")]
    for replaced in ("n1", "n2"):
        state = fold([*base, rel("n3", replaced, "supersedes")])
        assert state.contested() == []
        assert state.contested_ids() == set()


def test_a_supersede_resolves_the_dispute_record() -> None:
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-2"),
        rel("n2", "n1", "contradicts"),
        Dispute(id="x1", notes=("n1", "n2"), at=AT),
    ]
    state = fold(records)
    assert [d.id for d in state.open_disputes()] == ["x1"]
    assert state.disputes["x1"].open
    state = fold([*records, note("n3", "bee-2"), rel("n3", "n2", "supersedes")])
    assert state.open_disputes() == []
    assert state.disputes["x1"].resolved_by == "n3"
    assert not state.disputes["x1"].open


def test_a_resolution_record_closes_its_dispute_once() -> None:
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-2"),
        rel("n2", "n1", "contradicts"),
        Dispute(id="x1", notes=("n1", "n2"), at=AT),
        note("n3", "bee-1"),
        rel("n3", "n1", "supersedes"),
        Resolution(dispute="x1", superseded="n1", by="n3", at=AT),
        Resolution(dispute="x1", superseded="n2", by="n9", at=AT),
        Resolution(dispute="x-unknown", superseded="n2", by="n3", at=AT),
    ]
    state = fold(records)
    assert state.disputes["x1"].resolved_by == "n3"
    assert list(state.disputes) == ["x1"]


def test_a_resolution_alone_closes_a_dispute() -> None:
    records = [note("n1", "bee-1"), note("n2", "bee-2"), Dispute(id="x1", notes=("n1", "n2"), at=AT)]
    state = fold([*records, Resolution(dispute="x1", superseded="n1", by="n5", at=AT)])
    assert state.open_disputes() == []


def test_a_dispute_written_after_one_side_was_replaced_starts_resolved() -> None:
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-2"),
        note("n3", "bee-1"),
        rel("n3", "n1", "supersedes"),
        Dispute(id="x1", notes=("n1", "n2"), at=AT),
    ]
    state = fold(records)
    assert state.disputes["x1"].resolved_by == "n3"
    assert state.open_disputes() == []


def test_a_verifier_is_attached_to_its_dispute() -> None:
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-2"),
        Dispute(id="x1", notes=("n1", "n2"), at=AT),
        Verifier(bee="verify-1", dispute="x1", notes=("n1", "n2"), at=AT),
        Verifier(bee="verify-9", dispute="x-unknown", notes=("n1", "n2"), at=AT),
    ]
    assert fold(records).disputes["x1"].verifier == "verify-1"


def test_confirmations_count_once_per_other_bee() -> None:
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-1"),
        rel("n2", "n1", "supports"),  # a bee repeating itself is not support
        note("n3", "bee-2"),
        rel("n3", "n1", "supports"),
        note("n4", "bee-2"),
        rel("n4", "n1", "supports"),  # the same other bee again: still one
        note("n5", "bee-3"),
        rel("n5", "n1", "supports"),
    ]
    state = fold(records)
    assert state.confirmations("n1") == 2
    assert state.confirmed_by["n1"] == {"bee-2", "bee-3"}
    assert state.confirmations("n2") == 0


def test_a_note_supported_only_by_its_own_bee_has_no_confirmations() -> None:
    state = fold([note("n1", "bee-1"), note("n2", "bee-1"), rel("n2", "n1", "supports")])
    assert state.confirmations("n1") == 0
    assert "n1" not in state.confirmed_by


def test_relations_naming_unknown_notes_are_ignored() -> None:
    records = [
        note("n1", "bee-1"),
        rel("n9", "n1", "supersedes"),
        rel("n1", "n8", "contradicts"),
        rel("n7", "n1", "supports"),
    ]
    state = fold(records)
    assert ids(state.standing()) == ["n1"]
    assert state.superseded == {} and state.contested() == [] and state.confirmed_by == {}
    assert state.relations == []


def test_a_relation_written_before_its_note_is_ignored() -> None:
    state = fold([note("n1", "bee-1"), rel("n2", "n1", "supersedes"), note("n2", "bee-2")])
    assert ids(state.standing()) == ["n1", "n2"]


def test_a_note_cannot_relate_to_itself() -> None:
    state = fold([note("n1", "bee-1"), rel("n1", "n1", "supersedes")])
    assert ids(state.standing()) == ["n1"]


def test_a_relation_pointing_backwards_in_board_order_is_ignored() -> None:
    # Were it taken, two notes could supersede each other and neither would stand.
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-2"),
        rel("n2", "n1", "supersedes"),
        rel("n1", "n2", "supersedes"),
    ]
    state = fold(records)
    assert ids(state.standing()) == ["n2"]
    assert state.superseded == {"n1": "n2"}


def test_a_repeated_note_id_does_not_replace_the_first() -> None:
    first = note("n1", "bee-1")
    state = fold(
        [first, note("n2", "bee-2"), Note(id="n1", bee="bee-3", kind="blocker", text="x", score=1.0)]
    )
    assert state.notes["n1"] == first
    assert ids(state.standing()) == ["n1", "n2"]


def test_deliveries_record_each_recipient_once_in_order() -> None:
    records = [
        note("n1", "bee-1"),
        Delivery(note="n1", to="bee-3", how="judge", at=AT),
        Delivery(note="n1", to="bee-2", how="rule", at=AT),
        Delivery(note="n1", to="bee-3", how="correction", at=AT),
        Delivery(note="n1", to="bee-1", how="conflict", at=AT),  # its own note, now disputed: not a recipient
    ]
    assert fold(records).recipients == {"n1": ["bee-3", "bee-2"]}


def test_apply_one_record_at_a_time_equals_fold() -> None:
    records = [
        note("n1", "bee-1"),
        note("n2", "bee-2"),
        rel("n2", "n1", "contradicts"),
        Dispute(id="x1", notes=("n1", "n2"), at=AT),
        note("n3", "bee-3"),
        rel("n3", "n1", "supports"),
    ]
    state = BoardState()
    for record in records:
        state.apply(record)
    assert state == fold(records)
