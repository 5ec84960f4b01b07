"""How to read one record: what a gate decision meant, how near its bar it came, and whom it concerns.

Shared by ``hive audit`` (figures, labels) and ``hive tail`` (filters). Pure.

- **yes / no / unsure**: *unsure* is a decision the judge could not make (it answered in the unsure zone
  or abstained) so the gate's fallback made it; otherwise the outcome says *yes* (published, delivered, a
  relation, a rule that fired, ``answered``) or *no* (withheld, skipped, ``none``, a duplicate dropped, a
  capped or withheld delivery, ``continue``).
- **the deciding probability** of a judged decision is its answer nearest the bar it had to clear: a
  boolean's ``p`` against 0.8 (yes; 0.9 for ``answers``) or 0.2 (no), a choice's pick against 0.6, or 0.9
  for a ``supersedes`` across bees.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from hive.gates import ANSWERED_AT, CROSS_BEE_SUPERSEDES_AT
from hive.judge.policy import NO_AT, PICK_AT, YES_AT
from hive.records import ANSWER_GATE, BoardRecord, Delivery, Dispute, GateDecision, Note, Relation, Resolution, Verifier

NEGATIVE_OUTCOMES: frozenset[str] = frozenset(
    {"withhold", "withheld", "duplicate", "skip", "capped", "none", "continue"}
)
UNSURE_REASONS: frozenset[str] = frozenset({"unsure", "abstain"})
ESCAPE_OPTIONS: frozenset[str] = frozenset({"none", "other", "unclear", "unknown"})
NEUTRAL_TIERS: frozenset[str] = frozenset({"untrusted", "none"})
"""An answer "kept" from one of these is the neutral stand-in for no answer, not a reading."""

Verdict = Literal["yes", "no", "unsure"]


SMALLEST_SHOWN = 0.0001
"""Dollars: a cost below it shows as ``<$0.0001``, not as a free ``$0.0000`` (one gpt-4.1-nano judge call)."""


def dollars(cost: float) -> str:
    """A cost as the live view and ``hive audit`` both show it: four decimals under a dollar, where a cheap run's
    cost would otherwise read as $0.00; a cost that rounds to nothing is still more than nothing."""
    if 0 < cost < SMALLEST_SHOWN / 2:
        return f"<${SMALLEST_SHOWN}"
    return f"${cost:.4f}" if cost < 1 else f"${cost:.2f}"


def verdict_of(decision: GateDecision) -> Verdict:
    """yes, no, or unsure (the judge could not decide and the fallback did)."""
    if decision.source == "fallback" and (decision.reason or "unsure") in UNSURE_REASONS:
        return "unsure"
    return "no" if decision.outcome in NEGATIVE_OUTCOMES else "yes"


def asked_the_judge(decision: GateDecision) -> bool:
    """Whether the gate put its question to the judge: not a rule, nor a gate switched off (its fallback
    decides without asking, and logs no tier)."""
    return decision.source != "rule" and (bool(decision.tiers) or decision.latency_ms > 0)


@dataclass(frozen=True)
class Reading:
    """One answer's probability against the bar it had to clear."""

    question: str
    """The question, and for a choice its pick: ``news``, ``relation=supersedes``."""
    p: float
    bar: float

    @property
    def distance(self) -> float:
        return abs(self.p - self.bar)


def readings(decision: GateDecision, *, same_bee: bool | None = None) -> list[Reading]:
    """The probabilities a judged decision turned on, each with its bar. Neutral stand-ins are skipped.

    ``same_bee`` matters for relate only: ``supersedes`` across bees needs 0.9 (unknown counts as across).
    """
    found: list[Reading] = []
    for name, answer in decision.answers.items():
        if answer.tier in NEUTRAL_TIERS:
            continue
        if answer.type == "boolean" and answer.p is not None:
            yes_at = ANSWERED_AT if decision.gate == ANSWER_GATE else YES_AT
            bar = yes_at if abs(answer.p - yes_at) <= abs(answer.p - NO_AT) else NO_AT
            found.append(Reading(name, answer.p, bar))
        elif answer.type == "choice":
            p = answer.p if answer.p is not None else (answer.probs or {}).get(answer.pick or "")
            if p is None:
                continue
            across = decision.gate == "relate" and answer.pick == "supersedes" and same_bee is not True
            found.append(Reading(f"{name}={answer.pick}", p, CROSS_BEE_SUPERSEDES_AT if across else PICK_AT))
    return found


def deciding_reading(decision: GateDecision, *, same_bee: bool | None = None) -> Reading | None:
    """The reading nearest its bar: the one whose flip would most easily have changed the decision."""
    found = readings(decision, same_bee=same_bee)
    return min(found, key=lambda r: r.distance) if found else None


def referenced_notes(record: BoardRecord | GateDecision) -> list[str]:
    """The note ids a record names."""
    match record:
        case Note():
            return [record.id]
        case Relation():
            return [record.later, record.earlier]
        case Dispute() | Verifier():
            return list(record.notes)
        case Resolution():
            return [record.superseded, record.by]
        case Delivery():
            return [n for n in (record.note, record.replaces) if n]
        case GateDecision():
            return [n for n in (record.note, record.later, record.earlier) if n]
    return []


def same_bee(decision: GateDecision, notes: Mapping[str, Note]) -> bool | None:
    """For a relate decision: whether both notes are one bee's; ``None`` when either is not on the board."""
    later, earlier = notes.get(decision.later or ""), notes.get(decision.earlier or "")
    if later is None or earlier is None:
        return None
    return later.bee == earlier.bee


def decision_bee(decision: GateDecision) -> str | None:
    """The bee a decision is about: its author (publish), the note's author (deliver, relate)."""
    if decision.bee:
        return decision.bee
    if decision.utterance and "#" in decision.utterance:
        return decision.utterance.split("#", 1)[0]
    return None


def direct_bees(record: BoardRecord | GateDecision) -> set[str]:
    """Bees a record names itself, not through its notes: a note's author, a delivery's recipient, …"""
    match record:
        case Note():
            return {record.bee}
        case Delivery():
            return {record.to}
        case Verifier():
            return {record.bee}
        case GateDecision():
            return {b for b in (decision_bee(record), record.to) if b}
    return set()


def concerns_bee(record: BoardRecord | GateDecision, bee: str, notes: Mapping[str, Note]) -> bool:
    """Whether a record is about ``bee``: it names the bee, or one of the notes it names is the bee's."""
    if bee in direct_bees(record):
        return True
    return any(notes[n].bee == bee for n in referenced_notes(record) if n in notes)


# --------------------------------------------------------------------------- showing records to people

_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x20), *range(0x7F, 0xA0)) if chr(c) not in "\n\t"}


def printable(text: str) -> str:
    """``text`` with control characters (an escape sequence a model wrote, say) shown as ``\\xNN`` instead of
    acting on the terminal. Newlines and tabs stay."""
    return text.translate(_CONTROL)


def clock(at: str) -> str:
    """``HH:MM:SS`` of an ISO timestamp (UTC, as written), or the raw text if it is not one."""
    time_part = at.partition("T")[2]
    return time_part[:8] if len(time_part) >= 8 else at
