"""The board's current state, folded from its append-only records. Pure: no I/O.

Rules (they match the prior art and fix what it admitted):

- A superseded note leaves the standing set; it is "corrected, no longer standing".
- ``supports`` counts a confirmation once per *other* bee; a bee repeating itself is not support.
- A ``contradicts`` pair between two bees is contested while neither side is superseded; it ends as soon
  as one side is replaced. The judge never picks a winner.
- Relations naming a note that is not on the board are ignored, and so are relations whose ``later``
  note is not later on the board than its ``earlier`` one: a note cannot relate to itself, and a
  misdirected relation cannot make two notes supersede each other and leave neither standing.
- A note id appears once; a repeated note line does not replace the first (records are immutable).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from hive.records import BoardRecord, Delivery, Dispute, Note, Relation, Resolution, Verifier


@dataclass
class DisputeState:
    id: str
    notes: tuple[str, str]
    at: str
    resolved_by: str | None = None
    """The superseding note, once one side has been replaced."""
    verifier: str | None = None

    @property
    def open(self) -> bool:
        return self.resolved_by is None


@dataclass
class BoardState:
    notes: dict[str, Note] = field(default_factory=dict)
    superseded: dict[str, str] = field(default_factory=dict)
    """earlier note id → the note that superseded it."""
    confirmed_by: dict[str, set[str]] = field(default_factory=dict)
    """note id → the other bees whose notes support it."""
    contradictions: list[tuple[str, str]] = field(default_factory=list)
    """(earlier, later) pairs from different bees that contradict each other."""
    recipients: dict[str, list[str]] = field(default_factory=dict)
    """note id → bees it was handed to, in order, each once."""
    disputes: dict[str, DisputeState] = field(default_factory=dict)
    relations: list[Relation] = field(default_factory=list)
    """The relations that took effect, in board order."""
    _position: dict[str, int] = field(default_factory=dict, init=False, repr=False)
    """note id → its index in board order."""

    def apply(self, record: BoardRecord) -> None:
        """Fold one more record into the state."""
        match record:
            case Note():
                if record.id not in self.notes:
                    self._position[record.id] = len(self.notes)
                    self.notes[record.id] = record
            case Relation():
                self._apply_relation(record)
            case Dispute():
                # A side may have been replaced before the dispute line was written.
                replaced = [self.superseded[n] for n in record.notes if n in self.superseded]
                self.disputes[record.id] = DisputeState(
                    record.id, record.notes, record.at, resolved_by=replaced[0] if replaced else None
                )
            case Resolution():
                dispute = self.disputes.get(record.dispute)
                if dispute is not None and dispute.resolved_by is None:
                    dispute.resolved_by = record.by
            case Delivery():
                # A conflict notice may carry a bee's own note back to it (its note is now disputed); the
                # note's recipients are the other bees it reached.
                note = self.notes.get(record.note)
                bees = self.recipients.setdefault(record.note, [])
                if record.to not in bees and (note is None or note.bee != record.to):
                    bees.append(record.to)
            case Verifier():
                dispute = self.disputes.get(record.dispute)
                if dispute is not None:
                    dispute.verifier = record.bee

    def _apply_relation(self, rel: Relation) -> None:
        later, earlier = self.notes.get(rel.later), self.notes.get(rel.earlier)
        if later is None or earlier is None or self._position[rel.later] <= self._position[rel.earlier]:
            return
        self.relations.append(rel)
        if rel.relation == "supersedes":
            self.superseded.setdefault(rel.earlier, rel.later)
            for dispute in self.disputes.values():
                if dispute.resolved_by is None and rel.earlier in dispute.notes:
                    dispute.resolved_by = rel.later
        elif rel.relation == "supports":
            if later.bee != earlier.bee:
                self.confirmed_by.setdefault(rel.earlier, set()).add(later.bee)
        elif rel.relation == "contradicts" and later.bee != earlier.bee:
            pair = (rel.earlier, rel.later)
            if pair not in self.contradictions:
                self.contradictions.append(pair)

    # ------------------------------------------------------------------ views

    def standing(self) -> list[Note]:
        """Notes not superseded, in board order."""
        return [n for n in self.notes.values() if n.id not in self.superseded]

    def contested(self) -> list[tuple[str, str]]:
        """Contradicting pairs where neither side has been superseded."""
        return [
            (a, b) for a, b in self.contradictions if a not in self.superseded and b not in self.superseded
        ]

    def contested_ids(self) -> set[str]:
        return {note for pair in self.contested() for note in pair}

    def confirmations(self, note_id: str) -> int:
        return len(self.confirmed_by.get(note_id, ()))

    def open_disputes(self) -> list[DisputeState]:
        return [d for d in self.disputes.values() if d.open and not (set(d.notes) & self.superseded.keys())]


def fold(records: Iterable[BoardRecord]) -> BoardState:
    """Fold board records, in file order, into the current state."""
    state = BoardState()
    for record in records:
        state.apply(record)
    return state
