"""The gate pipeline: utterance → publish → note on the board → relate → deliver.

The pipeline owns ``board.jsonl`` and ``gate.jsonl`` (it is their only writer) and the routing state: which
bee holds which note, how many plain deliveries each bee has had, and the open disputes. Each bee's
utterances are handled by one worker in arrival order; different bees' workers run concurrently, so one
slow judge call never stalls another bee's traffic. A bee never waits on its own gates.

Routing rules (pure decisions over the board state, I/O only through ``send`` and the two writers):

- relate compares a new note with at most 6 earlier *standing* notes (never superseded ones).
- deliver asks once per new note × other live bee. Plain judged deliveries count against a per-bee cap;
  over the cap a note is recorded as ``capped``, never dropped silently. Decisions and blockers are
  delivered by rule and are not capped.
- when B supersedes A, every bee that holds A (posted or received it) gets a correction by rule, outside
  the cap. A cross-bee ``contradicts`` opens a dispute: both notes stay, and every holder of either side
  gets a conflict notice. A later supersedes of either side resolves the dispute.
- with ``race``, each new finding or decision that still stands and is in no open dispute is put to the
  ``answer`` gate; the first near-certain yes becomes :attr:`Pipeline.answered`, for the coordinator to
  wrap the hive up.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from hive.board import BoardState, DisputeState
from hive.gates import Gates, highest_number, select_related
from hive.records import (
    BoardRecord,
    Delivery,
    Dispute,
    GateDecision,
    InboxItem,
    Note,
    Received,
    Relation,
    Resolution,
    Utterance,
    Verifier,
    parse_iso,
)
from hive.store import JsonlWriter
from hive.wording import plural

Send = Callable[[str, list[InboxItem]], Awaitable[None]]
Observe = Callable[[Any], None]

_DONE = None


@dataclass
class BeeSlot:
    id: str
    angle: str
    live: bool = True
    holds: set[str] = field(default_factory=set)
    plain_deliveries: int = 0
    queue: asyncio.Queue[Utterance | None] = field(default_factory=asyncio.Queue)


@dataclass
class PipelineStats:
    utterances: int = 0
    notes: int = 0
    deliveries: int = 0
    corrections: int = 0
    disputes: int = 0
    decisions: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    """Per published note: from the utterance's arrival to the last inbox it was sent to."""


class Pipeline:
    def __init__(
        self,
        gates: Gates,
        board: JsonlWriter,
        gate_log: JsonlWriter,
        send: Send,
        *,
        delivery_cap: int = 10,
        similarity: Callable[[str, str], float] | None = None,
        observe: Observe | None = None,
        race: bool = False,
    ) -> None:
        self.gates = gates
        self.board = board
        self.gate_log = gate_log
        self.send = send
        self.delivery_cap = delivery_cap
        self.similarity = similarity
        self.observe = observe or (lambda _event: None)
        self.race = race
        self.answered: Note | None = None
        """The note the ``answer`` gate found answers the goal (with ``race``), once there is one."""
        self.state = BoardState()
        self.bees: dict[str, BeeSlot] = {}
        self.stats = PipelineStats()
        self._note_ids = (f"n-{i:04d}" for i in itertools.count(1))
        self._dispute_ids = (f"d-{i}" for i in itertools.count(1))
        self._arrived: dict[str, float] = {}

    # ------------------------------------------------------------------ bees

    def add_bee(self, bee: str, angle: str) -> BeeSlot:
        slot = BeeSlot(bee, angle)
        self.bees[bee] = slot
        return slot

    def restore(self, records: Sequence[BoardRecord], answered: str | None = None, *, decisions: int = 0,
                utterances: int = 0) -> None:
        """Take up a stopped run's board (``hive resume``), once its bees are added: the state, what each
        bee holds and how many judged notes it was given, and ids that go on past the board's.
        ``answered`` is the note the ``answer`` gate had already accepted, if any. ``decisions`` (gate log rows)
        and ``utterances`` (publish decisions) count what the gate log already holds, so that the stats, and the
        summary of the run, tell the whole run rather than only what comes after the resume."""
        for record in records:
            self.state.apply(record)
        deliveries = [r for r in records if isinstance(r, Delivery)]
        self.stats = PipelineStats(
            utterances=utterances, notes=len(self.state.notes), deliveries=len(deliveries),
            corrections=sum(d.how == "correction" for d in deliveries), disputes=len(self.state.disputes),
            decisions=decisions,
        )
        self._note_ids = (f"n-{i:04d}" for i in itertools.count(highest_number(self.state.notes, "n-") + 1))
        self._dispute_ids = (f"d-{i}" for i in itertools.count(highest_number(self.state.disputes, "d-") + 1))
        for note in self.state.notes.values():
            if note.bee in self.bees:
                self.bees[note.bee].holds.add(note.id)
        for record in records:
            if isinstance(record, Delivery) and record.to in self.bees:
                slot = self.bees[record.to]
                slot.holds.update(n for n in (record.note, record.replaces) if n is not None)
                slot.plain_deliveries += record.how == "judge"
        self.answered = self.state.notes.get(answered) if answered else None

    def catch_up(self, bee: str, records: Sequence[BoardRecord]) -> list[InboxItem]:
        """Hand a bee that ``hive resume`` starts again the corrections and conflict notices it missed while
        it was stopped (``records``: the board :meth:`restore` took up), with the records they would have had
        if it had been live. The items are for the bee's first inbox."""
        slot = self.bees[bee]
        items = []
        for missed in missed_notices(bee, records, self.state):
            delivery = missed.delivery
            correction = delivery.how == "correction"
            self._log(self.gates.rule(
                "correct" if correction else "conflict", "deliver", to=bee, note=delivery.note,
                earlier=missed.earlier, later=missed.later, dispute=missed.dispute,
                reason=f"{missed.later} {'supersedes' if correction else 'contradicts'} {missed.earlier}"
                       f" (missed while {bee} was stopped)"))
            slot.holds.update(n for n in (delivery.note, delivery.replaces) if n is not None)
            self._append(delivery)
            self.stats.deliveries += 1
            self.stats.corrections += correction
            items.append(inbox_item(delivery, self.state.notes))
        return items

    async def judge_now(self, utterance: Utterance) -> None:
        """Handle an utterance at once, outside its bee's worker: one a stopped run left unjudged."""
        self.stats.utterances += 1
        await self.handle(utterance)

    def submit(self, utterance: Utterance) -> None:
        """Queue an utterance for its bee's worker. Never blocks the caller."""
        self._arrived[utterance.uid] = time.perf_counter()
        self.stats.utterances += 1
        self.bees[utterance.bee].queue.put_nowait(utterance)

    def stop_delivering(self, bee: str) -> None:
        """The bee has handed in its report, or its output ended: nothing more reaches it, not even in the
        seconds its process takes to exit. Its queued utterances are still handled."""
        self.bees[bee].live = False

    def bee_done(self, bee: str) -> None:
        """The bee has an outcome: deliver nothing more to it; its queued utterances are still handled."""
        slot = self.bees[bee]
        slot.live = False
        slot.queue.put_nowait(_DONE)

    async def worker(self, bee: str) -> None:
        """Handle one bee's utterances in order until the bee is done and its queue is empty."""
        queue = self.bees[bee].queue
        while (utterance := await queue.get()) is not None:
            await self.handle(utterance)

    # ------------------------------------------------------------------ records

    def _append(self, record: BoardRecord) -> None:
        self.board.append(record)
        self.state.apply(record)
        self.observe(record)

    def _log(self, decision: GateDecision | None) -> None:
        if decision is None:
            return
        self.gate_log.append(decision)
        self.stats.decisions += 1
        self.observe(decision)

    # ------------------------------------------------------------------ the pipeline

    async def handle(self, utterance: Utterance) -> None:
        slot = self.bees[utterance.bee]
        result = await self.gates.publish(utterance, focus=slot.angle, board=self.state.notes.values())
        self._log(result.decision)
        if not result.publish or result.kind is None:
            self._arrived.pop(utterance.uid, None)
            return
        note = Note(
            id=next(self._note_ids),
            bee=utterance.bee,
            kind=result.kind,
            text=utterance.text,
            score=round(result.score, 4),
            utterance=utterance.uid,
            decision=result.decision.id if result.decision else None,
        )
        self._append(note)
        self.stats.notes += 1
        slot.holds.add(note.id)
        await self._relate(note)
        if note.id not in self.state.superseded:
            await self._deliver_everywhere(note)
        arrived = self._arrived.pop(utterance.uid, None)
        if arrived is not None:
            self.stats.latencies_ms.append((time.perf_counter() - arrived) * 1000)
        if self.race and self.answered is None and self._may_answer(note):
            answer = await self.gates.answer(note)
            self._log(answer.decision)
            if answer.answered and self.answered is None:
                self.answered = note

    def _may_answer(self, note: Note) -> bool:
        """A finding or decision that still stands and that no open dispute puts in doubt."""
        disputed = {n for d in self.state.open_disputes() for n in d.notes}
        return note.kind in ("finding", "decision") and note.id not in self.state.superseded and note.id not in disputed

    async def _relate(self, note: Note) -> None:
        if self.gates.modes["relate"] == "off":
            # Nothing would be judged, and choosing candidates may embed texts on the event loop.
            return
        earlier = [n for n in self.state.standing() if n.id != note.id]
        candidates = select_related(note, earlier, limit=6, similarity=self.similarity)
        results = await asyncio.gather(*(self.gates.relate(e, note) for e in candidates))
        for before, result in zip(candidates, results, strict=True):
            self._log(result.decision)
            if result.relation is None:
                continue
            relation = Relation(
                later=note.id,
                earlier=before.id,
                relation=result.relation,
                score=round(result.score, 4),
                same_bee=before.bee == note.bee,
                decision=result.decision.id if result.decision else None,
            )
            open_before = {d.id for d in self.state.open_disputes()}
            self._append(relation)
            if relation.relation == "supersedes":
                await self._superseded(before, note, open_before)
            elif relation.relation == "contradicts" and before.bee != note.bee:
                await self._dispute(before, note, relation.at)

    async def _superseded(self, earlier: Note, later: Note, open_before: set[str]) -> None:
        for dispute in self.state.disputes.values():
            if dispute.id in open_before and earlier.id in dispute.notes:
                self._append(Resolution(dispute=dispute.id, superseded=earlier.id, by=later.id))
        for slot in self.bees.values():
            if slot.id == later.bee or earlier.id not in slot.holds or not slot.live:
                continue
            self._log(self.gates.rule("correct", "deliver", to=slot.id, note=later.id, earlier=earlier.id,
                                      later=later.id, reason=f"{later.id} supersedes {earlier.id}"))
            await self._hand_over(slot, Delivery(note=later.id, to=slot.id, how="correction", replaces=earlier.id))
            self.stats.corrections += 1

    async def _dispute(self, earlier: Note, later: Note, at: str) -> None:
        dispute = Dispute(id=next(self._dispute_ids), notes=(earlier.id, later.id), at=at)
        self._append(dispute)
        self.stats.disputes += 1
        for slot in self.bees.values():
            if not slot.live or not ({earlier.id, later.id} & slot.holds):
                continue
            # The notice carries the side this bee has not seen yet (the later one if it has both).
            new, old = (earlier, later) if later.id in slot.holds and earlier.id not in slot.holds else (later, earlier)
            self._log(self.gates.rule("conflict", "deliver", to=slot.id, note=new.id, earlier=earlier.id,
                                      later=later.id, dispute=dispute.id,
                                      reason=f"{later.id} contradicts {earlier.id}"))
            slot.holds.add(old.id)
            await self._hand_over(slot, Delivery(note=new.id, to=slot.id, how="conflict", replaces=old.id))

    async def _deliver_everywhere(self, note: Note) -> None:
        receivers = [s for s in self.bees.values() if s.id != note.bee and s.live and note.id not in s.holds]
        await asyncio.gather(*(self._deliver(note, slot) for slot in receivers))

    async def _deliver(self, note: Note, slot: BeeSlot) -> None:
        by_rule = note.kind in ("decision", "blocker")
        if not by_rule and slot.plain_deliveries >= self.delivery_cap:
            self._log(self.gates.rule("deliver", "capped", note=note.id, to=slot.id, bee=note.bee,
                                      reason=f"{slot.id} already received {plural(self.delivery_cap, 'note')}"))
            return
        if not by_rule:
            slot.plain_deliveries += 1  # reserved now: other notes are judged for this bee concurrently
        result = await self.gates.deliver(note, to_bee=slot.id, focus=slot.angle)
        self._log(result.decision)
        if not result.deliver:
            if not by_rule:
                slot.plain_deliveries -= 1
            return
        if note.id in self.state.superseded or not slot.live or note.id in slot.holds:
            if not by_rule:
                slot.plain_deliveries -= 1
            return
        how = "rule" if result.by_rule else "judge"
        await self._hand_over(slot, Delivery(note=note.id, to=slot.id, how=how))

    async def _hand_over(self, slot: BeeSlot, delivery: Delivery) -> None:
        slot.holds.add(delivery.note)
        self._append(delivery)
        self.stats.deliveries += 1
        await self.send(slot.id, [inbox_item(delivery, self.state.notes)])

    # ------------------------------------------------------------------ bee feedback, disputes

    def received(self, message: Received) -> None:
        """Log the stale copies a bee dropped from its inbox because a correction replaced them."""
        for note in message.withheld:
            by = self.state.superseded.get(note)
            self._log(self.gates.rule("withheld", "withheld", to=message.bee, note=note,
                                      reason=f"superseded by {by}" if by else "superseded"))

    def due_disputes(self, timeout: float, now: float | None = None) -> list[DisputeState]:
        """Open disputes older than ``timeout`` seconds (from the relation's own timestamp) with no verifier."""
        now = time.time() if now is None else now
        return [
            d for d in self.state.open_disputes()
            if d.verifier is None and now - parse_iso(d.at).timestamp() >= timeout
        ]

    def pending_disputes(self) -> list[DisputeState]:
        return [d for d in self.state.open_disputes() if d.verifier is None]

    def verifier_spawned(self, dispute: DisputeState, bee: str, angle: str) -> None:
        self._append(Verifier(bee=bee, dispute=dispute.id, notes=dispute.notes))
        self._log(self.gates.rule("verify", "spawn", bee=bee, dispute=dispute.id, earlier=dispute.notes[0],
                                  later=dispute.notes[1], reason=f"dispute {dispute.id} open past the timeout"))
        self.add_bee(bee, angle)

    def notes_of(self, ids: Sequence[str]) -> list[Note]:
        return [self.state.notes[i] for i in ids if i in self.state.notes]


class MissedNotice(NamedTuple):
    delivery: Delivery
    earlier: str
    later: str
    dispute: str | None = None


def missed_notices(bee: str, records: Sequence[BoardRecord], state: BoardState) -> list[MissedNotice]:
    """The corrections and conflict notices ``bee`` would have been sent had it been live, and was not
    (pure; ``state`` is ``records`` folded). What it holds is what it posted or was handed; a correction is
    owed for each of its notes another bee superseded, a conflict notice for each open dispute it holds a
    side of, carrying the side it has not seen (the later one if it has both), as :class:`Pipeline` sends
    them live."""
    holds = {n.id for n in state.notes.values() if n.bee == bee}
    told: set[tuple[str, frozenset[str | None]]] = set()
    for r in records:
        if isinstance(r, Delivery) and r.to == bee:
            holds.update(n for n in (r.note, r.replaces) if n is not None)
            told.add((r.how, frozenset((r.note, r.replaces))))
    missed: list[MissedNotice] = []
    for earlier, later in state.superseded.items():  # in board order, so a chain of corrections stays in order
        owed = earlier in holds and state.notes[later].bee != bee
        if owed and ("correction", frozenset((later, earlier))) not in told:
            correction = Delivery(note=later, to=bee, how="correction", replaces=earlier)
            missed.append(MissedNotice(correction, earlier, later))
            holds.add(later)
    for dispute in state.open_disputes():
        earlier, later = dispute.notes
        if not {earlier, later} & holds or ("conflict", frozenset(dispute.notes)) in told:
            continue
        new, old = (earlier, later) if later in holds and earlier not in holds else (later, earlier)
        missed.append(MissedNotice(Delivery(note=new, to=bee, how="conflict", replaces=old), earlier, later,
                                   dispute.id))
        holds.add(new)
    return missed


def inbox_item(delivery: Delivery, notes: Mapping[str, Note]) -> InboxItem:
    """What a delivery puts in the bee's inbox: the note, and for a correction or a conflict the note it
    answers (the superseded one, or the other side)."""
    note = notes[delivery.note]
    other = notes.get(delivery.replaces) if delivery.replaces else None
    kind: Literal["note", "correction", "conflict"] = (
        delivery.how if delivery.how == "correction" or delivery.how == "conflict" else "note")
    return InboxItem(kind=kind, note=note.id, bee=note.bee, note_kind=note.kind, text=note.text,
                     replaces=delivery.replaces, other_bee=other.bee if other else None,
                     other_text=other.text if other else None)


def verifier_angle(a: Note, b: Note) -> str:
    """The verifier's angle: the two notes, verbatim."""
    return (
        f'Two investigators disagree. {a.bee} reported: "{a.text}" {b.bee} reported: "{b.text}" '
        "Find out which holds, or under which conditions both do, with the command, file and line that "
        "shows it, and state it as FOUND:."
    )
