"""Property-based tests of the JSON-lines store and the board fold.

Store: whatever the byte boundaries at which lines reach the disk (torn writes completed later), and
however often readers look, every complete line is read exactly once, in order; damaged lines are
skipped and named by their true line number.

Board: any sequence of notes and relations, in any order, folds to a consistent state, and folding
record by record from any split point gives the same state.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from hive.board import BoardState, fold
from hive.records import (
    BOARD_ADAPTER,
    NOTE_KINDS,
    BoardRecord,
    Delivery,
    Dispute,
    Note,
    Relation,
    Resolution,
)
from hive.store import JsonlReader, JsonlWriter, dumps, read_all

PROPERTY_SETTINGS = settings(max_examples=100, deadline=None)
AT = "2026-11-30T03:04:05.123Z"
BEES = ("bee-1", "bee-2", "bee-3")

# --------------------------------------------------------------------------- store


@st.composite
def board_lines(draw: st.DrawFn) -> list[Note | bytes]:
    """Lines of a board file: mostly notes, some blank lines, some damaged ones (never newline-bearing)."""
    count = draw(st.integers(0, 14))
    lines: list[Note | bytes] = []
    for n in range(count):
        shape = draw(st.sampled_from(["note", "note", "note", "note", "blank", "damaged"]))
        if shape == "note":
            text = draw(st.text(max_size=40))
            lines.append(Note(id=f"n{n}", bee=draw(st.sampled_from(BEES)), kind="finding", text=text, score=0.5, at=AT))
        elif shape == "blank":
            lines.append(draw(st.sampled_from([b"", b" ", b"\t "])))
        else:
            junk = draw(st.binary(max_size=20).filter(lambda b: b"\n" not in b))
            lines.append(b"#" + junk)  # '#' can start no JSON value
    return lines


def encode(line: Note | bytes) -> bytes:
    return dumps(line) if isinstance(line, Note) else line + b"\n"


@PROPERTY_SETTINGS
@given(
    lines=board_lines(),
    cuts=st.lists(st.floats(0, 1), max_size=30),
    slow_reader_looks=st.lists(st.booleans(), max_size=40),
)
def test_torn_writes_and_incremental_reads_lose_and_repeat_nothing(
    lines: list[Note | bytes], cuts: list[float], slow_reader_looks: list[bool]
) -> None:
    stream = b"".join(encode(line) for line in lines)
    boundaries = sorted({round(c * len(stream)) for c in cuts} | {len(stream)})
    expected = [line for line in lines if isinstance(line, Note)]
    damaged_at = [n + 1 for n, line in enumerate(lines) if isinstance(line, bytes) and line.strip()]

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "board.jsonl"
        eager = JsonlReader(path, BOARD_ADAPTER)  # looks after every write
        slow = JsonlReader(path, BOARD_ADAPTER)  # looks now and then
        eager_got: list[BoardRecord] = []
        slow_got: list[BoardRecord] = []
        with JsonlWriter(path) as writer:
            written = 0
            for step, end in enumerate(boundaries):
                if end > written:
                    writer.append_bytes(stream[written:end])
                    written = end
                new = eager.read_new()
                eager_got += new
                # A reader never returns more than the complete lines on disk so far.
                complete = stream[:written].count(b"\n")
                assert eager.line_no == complete
                assert eager.offset == stream.rfind(b"\n", 0, written) + 1
                if step < len(slow_reader_looks) and slow_reader_looks[step]:
                    slow_got += slow.read_new()
        slow_got += slow.read_new()
        late = JsonlReader(path, BOARD_ADAPTER)  # starts after everything was written
        late_got = late.read_new()

    assert eager_got == expected
    assert slow_got == expected
    assert late_got == expected
    for reader in (eager, slow, late):
        assert [int(w.split(": line ")[1].split(":")[0]) for w in reader.warnings] == damaged_at


@PROPERTY_SETTINGS
@given(lines=board_lines(), torn=st.binary(min_size=1, max_size=30).filter(lambda b: b"\n" not in b))
def test_a_torn_tail_is_never_returned_until_its_newline_arrives(lines: list[Note | bytes], torn: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "board.jsonl"
        with JsonlWriter(path) as writer:
            for line in lines:
                writer.append_bytes(encode(line))
            writer.append_bytes(torn)
            reader = JsonlReader(path, BOARD_ADAPTER)
            before = reader.read_new()
            assert reader.read_new() == []
            assert reader.offset == path.stat().st_size - len(torn)
            writer.append_bytes(b"\n")
            reader.read_new()  # the completed tail is parsed now (here: as a damaged line)
    assert before == [line for line in lines if isinstance(line, Note)]
    assert reader.line_no == len(lines) + 1


@PROPERTY_SETTINGS
@given(
    before=board_lines(),
    fragment=st.binary(max_size=30).filter(lambda b: b"\n" not in b),
    after=board_lines(),
)
def test_a_new_writer_after_a_crash_mid_line_loses_no_complete_line(
    before: list[Note | bytes], fragment: bytes, after: list[Note | bytes]
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "board.jsonl"
        with JsonlWriter(path) as crashed:
            for line in before:
                crashed.append_bytes(encode(line))
            crashed.append_bytes(fragment)  # the writer died here, mid-line
        with JsonlWriter(path) as restarted:
            for line in after:
                restarted.append_bytes(encode(line))
        records, _ = read_all(path, BOARD_ADAPTER)
    notes = [line for line in before + after if isinstance(line, Note)]
    assert records == notes


# --------------------------------------------------------------------------- board fold


def dispute(k: int, earlier: str, later: str) -> Dispute:
    return Dispute(id=f"x{k}", notes=(earlier, later), at=AT)


def resolution(k: int, superseded: str, by: str) -> Resolution:
    return Resolution(dispute=f"x{k}", superseded=superseded, by=by, at=AT)


def delivery(note: str, to: str) -> Delivery:
    return Delivery(note=note, to=to, how="judge", at=AT)


@st.composite
def board_records(draw: st.DrawFn) -> list[BoardRecord]:
    """Notes from several bees and relations, disputes, resolutions and deliveries among them, any order."""
    count = draw(st.integers(1, 10))
    notes = [
        Note(
            id=f"n{n}",
            bee=draw(st.sampled_from(BEES)),
            kind=draw(st.sampled_from(NOTE_KINDS)),
            text=f"note {n}",
            score=0.5,
            at=AT,
        )
        for n in range(count)
    ]
    ids = st.sampled_from([n.id for n in notes] + ["ghost"])  # "ghost" is never on the board
    relations = draw(
        st.lists(
            st.builds(
                Relation,
                later=ids,
                earlier=ids,
                relation=st.sampled_from(["supersedes", "contradicts", "supports"]),
                score=st.just(0.7),
                at=st.just(AT),
            ),
            max_size=20,
        )
    )
    disputes = draw(st.lists(st.builds(dispute, st.integers(0, 3), ids, ids), max_size=4))
    resolutions = draw(st.lists(st.builds(resolution, st.integers(0, 3), ids, ids), max_size=2))
    deliveries = draw(st.lists(st.builds(delivery, ids, st.sampled_from(BEES)), max_size=6))
    records: list[BoardRecord] = [*notes, *relations, *disputes, *resolutions, *deliveries]
    return draw(st.permutations(records))


def standing_ids(state: BoardState) -> list[str]:
    return [n.id for n in state.standing()]


@PROPERTY_SETTINGS
@given(records=board_records())
def test_the_fold_is_always_consistent(records: list[BoardRecord]) -> None:
    state = fold(records)
    notes = state.notes
    standing = set(standing_ids(state))

    # Every note is either standing or superseded, never both; nothing else appears.
    assert standing | state.superseded.keys() == notes.keys()
    assert not standing & state.superseded.keys()
    assert {n.id for n in records if isinstance(n, Note)} == notes.keys()

    # Supersedes point forward in board order, so every chain of corrections ends at a standing note.
    order = list(notes)
    for earlier, later in state.superseded.items():
        assert later in notes and order.index(later) > order.index(earlier)
    for note_id in notes:
        seen = {note_id}
        while note_id in state.superseded:
            note_id = state.superseded[note_id]
            assert note_id not in seen
            seen.add(note_id)
        assert note_id in standing

    # A contested pair is two standing notes of different bees, listed once.
    contested = state.contested()
    assert len(contested) == len(set(contested))
    for earlier, later in contested:
        assert earlier in standing and later in standing
        assert notes[earlier].bee != notes[later].bee
    assert state.contested_ids() <= standing

    # Confirmations come from other bees only, at most one per bee.
    for note_id, bees in state.confirmed_by.items():
        assert notes[note_id].bee not in bees
        assert state.confirmations(note_id) == len(bees) <= len(BEES) - 1

    # An open dispute has no superseded side; relations that took effect name notes on the board.
    for dispute in state.open_disputes():
        assert dispute.open and not set(dispute.notes) & state.superseded.keys()
    for relation in state.relations:
        assert relation.later in notes and relation.earlier in notes

    # Each recipient appears once per note.
    for bees in state.recipients.values():
        assert len(bees) == len(set(bees))


@PROPERTY_SETTINGS
@given(records=board_records(), split=st.integers(0, 60))
def test_folding_in_two_parts_equals_folding_at_once(records: list[BoardRecord], split: int) -> None:
    split = min(split, len(records))
    state = fold(records[:split])
    for record in records[split:]:
        state.apply(record)
    whole = fold(records)
    assert state == whole
    assert standing_ids(state) == standing_ids(whole)
    assert state.contested() == whole.contested()
    assert [d.id for d in state.open_disputes()] == [d.id for d in whole.open_disputes()]


@PROPERTY_SETTINGS
@given(records=board_records())
def test_relations_with_unknown_notes_change_nothing(records: list[BoardRecord]) -> None:
    known = [r for r in records if not (isinstance(r, Relation) and "ghost" in (r.later, r.earlier))]
    assert fold(records) == fold(known)


@PROPERTY_SETTINGS
@given(records=board_records())
def test_the_fold_survives_the_trip_through_a_board_file(records: list[BoardRecord]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "board.jsonl"
        with JsonlWriter(path) as writer:
            for record in records:
                writer.append(record)
        reader = JsonlReader(path, BOARD_ADAPTER)
        read_back = reader.read_new()
    assert reader.warnings == []
    assert fold(read_back) == fold(records)
