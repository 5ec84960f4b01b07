"""The three gates between the bees: publish, deliver, relate. Each asks the judge typed questions about a
small state, reads the answers with a pure policy, and returns its outcome plus the ``gate.jsonl`` row.

State fields and question names are a public contract (tiers, scripts and eval files depend on them):

============  ======================================  ==========================================
gate          state fields                            questions
============  ======================================  ==========================================
publish       ``note``, ``goal``, ``focus``, ``bee``  ``news`` (boolean), ``kind`` (choice)
deliver       ``note``, ``kind``, ``from_bee``,       ``useful`` (boolean)
              ``focus``
relate        ``earlier``, ``later``, ``same_bee``,   ``relation`` (choice)
              ``goal``
answer        ``note``, ``kind``, ``bee``, ``goal``   ``answers`` (boolean)
============  ======================================  ==========================================

``answer`` is the early stop of ``hive start --race``: asked of each new standing finding or decision, a
near-certain yes (``ANSWERED_AT``) ends the run. It has no mode of its own: ``--race`` turns it on.

Rules run before (or instead of) the judge and are logged like any decision, never silently: a
near-duplicate candidate is dropped, and a ``decision`` or ``blocker`` note reaches every bee. Every method
is async and never raises: a judge that is down, unsure or switched off gives the gate's fallback.
"""

from __future__ import annotations

import functools
import itertools
import logging
import re
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from hive.judge.engine import Judge, Verdict
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question
from hive.records import (
    ANSWER_GATE,
    GATES,
    Answer,
    GateDecision,
    GateMode,
    Note,
    NoteKind,
    RelationKind,
    Utterance,
)

log = logging.getLogger("hive.gates")

GATE_VERSIONS: dict[str, int] = {"publish": 1, "deliver": 1, "relate": 1, ANSWER_GATE: 1}
"""Bumped whenever a gate's wording, thresholds or fallback change, so ledger rows stay comparable."""

NEWS = BooleanQuestion("news", "Would `note` help the other bees on `goal` who have not seen it?")
KIND = ChoiceQuestion(
    "kind",
    "What is `note`?",
    options={
        "finding": "A fact seen in evidence just now: tool output, a traceback, a reproduction, code read",
        "dead_end": "An approach, hypothesis or place that was tried or checked and ruled out",
        "decision": "A committed fix approach, fix location or conclusion the other bees should respect",
        "blocker": "Something outside the problem that stops progress, such as a missing package or setup",
        "other": "Routine progress: plans, narration, restating the task, fixes to its own commands",
    },
    escape="other",
)
USEFUL = BooleanQuestion("useful", "Is `note` useful for the work described in `focus`?")
_RELATION_TEXT = "`earlier` was posted first, `later` after it. What does `later` say about `earlier`?"
_RELATION_OPTIONS = {
    "supersedes": "later corrects or replaces earlier with newer or more direct evidence and says why "
    "(an environment that was fixed, a cause that was ruled out, a newer result)",
    "contradicts": "later states the opposite and does not explain earlier away; both cannot be true",
    "supports": "later confirms earlier or adds evidence for it",
    "none": "later is about something else, or neither adds to nor takes away from earlier",
}
CROSS_BEE_SUPERSEDES_AT = 0.9
"""Replacing another bee's note needs a near-certain reading (the prior art's misreads sat at 0.6–0.87)."""
RELATION_SAME_BEE = ChoiceQuestion(
    "relation", _RELATION_TEXT, options=_RELATION_OPTIONS, escape="none", capability="relate"
)
RELATION_CROSS_BEE = ChoiceQuestion(
    "relation",
    _RELATION_TEXT,
    options=_RELATION_OPTIONS,
    escape="none",
    capability="relate",
    pick_bars={"supersedes": CROSS_BEE_SUPERSEDES_AT},
)

ANSWERED_AT = 0.9
"""Ending every bee's work needs a near-certain reading, as replacing another bee's note does. The bar is part of
the question, so a cheap tier's 0.85 is unsure and escalates to the next tier instead of settling it."""
ANSWERS = BooleanQuestion(
    "answers",
    "Does `note` give the answer to `goal`: what causes it, shown by evidence, not a step toward it?",
    yes_at=ANSWERED_AT,
)

PUBLISH_QUESTIONS = (NEWS, KIND)
DELIVER_QUESTIONS = (USEFUL,)

GATE_CONTRACT: dict[str, tuple[tuple[str, ...], tuple[Question, ...]]] = {
    "publish": (("note", "goal", "focus", "bee"), PUBLISH_QUESTIONS),
    "deliver": (("note", "kind", "from_bee", "focus"), DELIVER_QUESTIONS),
    "relate": (("earlier", "later", "same_bee", "goal"), (RELATION_CROSS_BEE,)),
    "answer": (("note", "kind", "bee", "goal"), (ANSWERS,)),
}
"""Each gate's state fields and questions: the public contract tiers and rule files are written against."""

DUPLICATE_SHARE = 0.8
SIMILARITY_POOL_PER_PICK = 32
"""relate candidates re-ranked by similarity per candidate kept (see :func:`select_related`)."""
FALLBACK_SCORE = 0.5
"""The score of a note published by the fallback on the bee's own marker: no judge vouched for it."""
RULE_KINDS: frozenset[str] = frozenset({"decision", "blocker"})
"""Note kinds delivered to every bee by rule, whatever the judge says or whether it answers."""

_WORD = re.compile(r"[\w./-]{3,}")
_MARKER = re.compile(
    r"^[\s>*#-]*(?P<marker>FOUND|DEAD[ _-]?END|DECIDED|BLOCKED)\s*(?:\*\*)?\s*:", re.IGNORECASE | re.MULTILINE
)
_MARKER_KINDS: dict[str, NoteKind] = {
    "found": "finding",
    "deadend": "dead_end",
    "decided": "decision",
    "blocked": "blocker",
}


# --------------------------------------------------------------------------- pure helpers


@functools.lru_cache(maxsize=8192)
def word_set(text: str) -> frozenset[str]:
    """Lower-cased tokens of at least 3 letters, digits or ``_./-``.

    Cached by text: every utterance is compared with every note on the board, so without the cache a board
    of 2,000 notes costs 2,000 regex scans per utterance (bench_pipeline.py).
    """
    return frozenset(_WORD.findall(text.lower()))


def find_duplicate(text: str, board: Collection[Note]) -> tuple[bool, Note | None]:
    """Whether ``text`` duplicates the board, and which note: at least 80% of its words are in one note.

    An utterance with no words at all is a duplicate of nothing in particular: ``(True, None)``.
    """
    words = word_set(text)
    if not words:
        return True, None
    need = DUPLICATE_SHARE * len(words)
    for note in board:
        other = word_set(note.text)
        if len(other) >= need and len(words & other) >= need:
            return True, note
    return False, None


def marked_kind(text: str) -> NoteKind | None:
    """The kind a bee marked its text with (``FOUND:``, ``DEAD END:``, ``DECIDED:``, ``BLOCKED:`` at the start
    of a line, any case), or ``None``. The first marker wins."""
    match = _MARKER.search(text)
    if match is None:
        return None
    return _MARKER_KINDS[re.sub(r"[ _-]", "", match["marker"].lower())]


def render_note(note: Note) -> str:
    """A note as the relate gate shows it: ``<bee> (<kind>): <text>``."""
    return f"{note.bee} ({note.kind}): {note.text}"


def publish_verdict(answers: Mapping[str, Answer]) -> tuple[str, NoteKind | None] | None:
    """``("publish", kind)`` on a confident news yes and a picked kind; ``("withhold", None)`` on a confident
    news no or a confident ``other``; ``None`` (unsure) otherwise."""
    news, kind = answers["news"], answers["kind"]
    if news.zone == "no" or kind.zone == "escape":
        return "withhold", None
    if news.zone == "yes" and kind.zone == "picked":
        return "publish", cast(NoteKind, kind.pick)
    return None


def answer_verdict(answers: Mapping[str, Answer]) -> str | None:
    """``answered`` on a near-certain yes (the question's bar is ``ANSWERED_AT``), ``continue`` on a confident no,
    else ``None``."""
    zone = answers["answers"].zone
    return "answered" if zone == "yes" else "continue" if zone == "no" else None


def deliver_verdict(answers: Mapping[str, Answer]) -> str | None:
    """``deliver`` on a confident yes, ``skip`` on a confident no, ``None`` (unsure) otherwise."""
    zone = answers["useful"].zone
    return "deliver" if zone == "yes" else "skip" if zone == "no" else None


def relate_verdict(
    answers: Mapping[str, Answer], *, same_bee: bool
) -> tuple[RelationKind | None, float] | None:
    """The relation and its probability, ``(None, p)`` for a confident ``none``, or ``None`` when unsure.

    The bars are in the question (0.6, or 0.9 for a cross-bee ``supersedes``); a same-bee ``contradicts``
    counts as ``supersedes``: a bee's later word replaces its earlier one.
    """
    answer = answers["relation"]
    p = answer.p or 0.0
    if answer.zone == "escape":
        return None, p
    if answer.zone != "picked":
        return None
    relation = cast(RelationKind, answer.pick)
    if same_bee and relation == "contradicts":
        relation = "supersedes"
    return relation, p


def select_related(
    new: Note,
    standing: Sequence[Note],
    *,
    limit: int = 6,
    similarity: Callable[[str, str], float] | None = None,
) -> list[Note]:
    """The earlier standing notes worth relating ``new`` to, closest first, at most ``limit``.

    A candidate shares at least 2 words with ``new`` and an overlap coefficient (shared words over the
    smaller word set) of at least 0.15. Candidates are ranked by that overlap; when ``similarity`` is given
    (e.g. an embedding cosine), the ``SIMILARITY_POOL_PER_PICK * limit`` best by overlap (192 for 6) are
    re-ranked by the overlap averaged with ``similarity(new.text, other.text)``. The pool bounds the
    similarity calls per note as the board grows: on a board of 2,000 notes most share a few common words
    with any new note, and asking the similarity of each cost more than the judge itself. On the benchmark's
    boards the pool picks the same notes as re-ranking every candidate (bench_pipeline.py).
    """
    if limit <= 0:
        return []
    words = word_set(new.text)
    ranked: list[tuple[float, int, Note]] = []
    for order, other in enumerate(standing):
        if other.id == new.id:
            continue
        other_words = word_set(other.text)
        shared = len(words & other_words)
        smaller = min(len(words), len(other_words))
        if shared < 2 or smaller == 0 or shared / smaller < 0.15:
            continue
        ranked.append((-shared / smaller, order, other))
    ranked.sort(key=lambda item: (item[0], item[1]))
    if similarity is not None:
        pool = ranked[: SIMILARITY_POOL_PER_PICK * limit]
        ranked = sorted(
            ((overlap - similarity(new.text, other.text)) / 2, order, other) for overlap, order, other in pool
        )
    return [note for _, _, note in ranked[:limit]]


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class PublishResult:
    decision: GateDecision | None
    """The ``gate.jsonl`` row; ``None`` when the gate is off (nothing is recorded)."""
    publish: bool
    kind: NoteKind | None
    score: float


@dataclass(frozen=True)
class DeliverResult:
    decision: GateDecision | None
    deliver: bool
    score: float
    by_rule: bool


@dataclass(frozen=True)
class RelateResult:
    decision: GateDecision | None
    relation: RelationKind | None
    score: float


@dataclass(frozen=True)
class AnswerResult:
    decision: GateDecision | None
    answered: bool
    score: float


def sequential_ids(after: Iterable[str] = ()) -> Callable[[], str]:
    """``g-000001``, ``g-000002``, …, starting past the highest of the ids ``after`` (a resumed run's)."""
    counter = itertools.count(highest_number(after, "g-") + 1)
    return lambda: f"g-{next(counter):06d}"


def highest_number(ids: Iterable[str], prefix: str) -> int:
    """The largest ``N`` among ids of the form ``<prefix>N``; 0 when there is none."""
    numbers = (int(i[len(prefix):]) for i in ids if i.startswith(prefix) and i[len(prefix):].isdigit())
    return max(numbers, default=0)


# --------------------------------------------------------------------------- the gates


class Gates:
    """The three gates over one judge, for one goal. Rows are returned, not written: the caller owns
    ``gate.jsonl``."""

    def __init__(
        self,
        judge: Judge,
        *,
        goal: str,
        modes: Mapping[str, GateMode] | None = None,
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.judge = judge
        self.goal = goal
        self.modes: dict[str, GateMode] = {gate: (modes or {}).get(gate, "active") for gate in GATES}
        self._new_id = new_id or sequential_ids()

    def rule(self, gate: str, outcome: str, **fields: Any) -> GateDecision:
        """A ``source="rule"`` row with a fresh id, e.g. ``rule("deliver", "capped", note=..., to=...)``. A row of
        one of the gates (a capped delivery) carries that gate's version and mode like its judged rows; the
        coordinator's own rules (``correct``, ``conflict``, ``withheld``, ``verify``) belong to no gate."""
        if gate in GATE_VERSIONS:
            fields = {"version": GATE_VERSIONS[gate], "mode": self.modes.get(gate, "active")} | fields
        return GateDecision(id=self._new_id(), gate=gate, outcome=outcome, source="rule", **fields)

    def _row(
        self, gate: str, outcome: str, verdict: Verdict, judged: str | None, **fields: Any
    ) -> GateDecision:
        mode = self.modes.get(gate, "active")
        if mode == "shadow":
            # a failure the verdict was judged in spite of (on a question it did not need) is no reason
            source, reason = "shadow", (verdict.reason if judged is None else None) or "shadow"
        elif judged is not None:
            source, reason = "judge", None
        else:
            source, reason = "fallback", verdict.reason or "unsure"
        return GateDecision(
            id=self._new_id(),
            gate=gate,
            outcome=outcome,
            source=source,
            reason=reason,
            version=GATE_VERSIONS[gate],
            mode=mode,
            verdict=judged or "unsure",
            answers=verdict.answers,
            tiers=verdict.tiers,
            latency_ms=verdict.latency_ms,
            tokens=verdict.tokens,
            cost_usd=verdict.cost_usd,
            state_digest=verdict.state_digest,
            **fields,
        )

    # ----------------------------------------------------------------------- publish

    async def publish(self, utterance: Utterance, *, focus: str, board: Collection[Note]) -> PublishResult:
        """Should this utterance become a note, and of which kind? Duplicates are dropped by rule, first and again
        after the judge if ``board`` (a live view of the notes) gained a copy meanwhile."""
        marked = marked_kind(utterance.text)
        fallback = PublishResult(None, marked is not None, marked, FALLBACK_SCORE if marked else 0.0)
        try:
            return await self._publish(utterance, focus=focus, board=board, fallback=fallback)
        except Exception as e:  # a bug here must cost one decision, not the run
            log.warning("publish gate failed on %s: %s", utterance.uid, e)
            return fallback

    async def _publish(
        self, utterance: Utterance, *, focus: str, board: Collection[Note], fallback: PublishResult
    ) -> PublishResult:
        fields: dict[str, Any] = {"bee": utterance.bee, "utterance": utterance.uid, "text": utterance.text}
        duplicate, of = find_duplicate(utterance.text, board)
        if duplicate:
            reason = f"duplicate of {of.id}" if of else "no words"
            row = self.rule(
                "publish",
                "duplicate",
                reason=reason,
                version=GATE_VERSIONS["publish"],
                mode=self.modes["publish"],
                note=of.id if of else None,
                score=0.0,
                **fields,
            )
            return PublishResult(row, False, None, 0.0)
        if self.modes["publish"] == "off":
            # The judge is not asked and nothing of it is recorded, but the utterance's decision is: its row is
            # the only place a withheld text lives, and every utterance has exactly one publish row.
            row = GateDecision(
                id=self._new_id(), gate="publish", outcome="publish" if fallback.publish else "withhold",
                source="fallback", reason="off", version=GATE_VERSIONS["publish"], mode="off",
                kind=fallback.kind, score=fallback.score, **fields,
            )
            return PublishResult(row, fallback.publish, fallback.kind, fallback.score)
        state = {"note": utterance.text, "goal": self.goal, "focus": focus, "bee": utterance.bee}
        verdict = await self.judge.ask("publish", PUBLISH_QUESTIONS, state)
        judged = publish_verdict(verdict.answers)
        if judged is not None and self.modes["publish"] == "active":
            outcome, kind = judged
            result = PublishResult(None, outcome == "publish", kind, verdict.answers["news"].p or 0.0)
        else:
            result = fallback
        row = self._row(
            "publish",
            "publish" if result.publish else "withhold",
            verdict,
            judged[0] if judged else None,
            kind=result.kind,
            score=result.score,
            **fields,
        )
        if result.publish:
            # Bees' utterances are judged concurrently: another bee's copy may have reached the board (a live view)
            # while the judge was asked. The judge's answers stay in the row.
            late, of = find_duplicate(utterance.text, board)
            if late and of is not None:
                row = row.model_copy(update={"outcome": "duplicate", "source": "rule", "note": of.id, "kind": None,
                                             "score": 0.0, "reason": f"duplicate of {of.id}, published while judged"})
                return PublishResult(row, False, None, 0.0)
        return PublishResult(row, result.publish, result.kind, result.score)

    # ----------------------------------------------------------------------- deliver

    async def deliver(self, note: Note, *, to_bee: str, focus: str) -> DeliverResult:
        """Should ``note`` go to ``to_bee``, whose angle is ``focus``? Decisions and blockers go by rule."""
        fields: dict[str, Any] = {"note": note.id, "to": to_bee, "bee": note.bee, "kind": note.kind}
        try:
            if note.kind in RULE_KINDS:
                row = self.rule(
                    "deliver",
                    "deliver",
                    reason=f"every bee gets a {note.kind}",
                    version=GATE_VERSIONS["deliver"],
                    mode=self.modes["deliver"],
                    score=1.0,
                    **fields,
                )
                return DeliverResult(row, True, 1.0, True)
            if self.modes["deliver"] == "off":
                return DeliverResult(None, False, 0.0, False)
            state = {"note": note.text, "kind": note.kind, "from_bee": note.bee, "focus": focus}
            verdict = await self.judge.ask("deliver", DELIVER_QUESTIONS, state)
            judged = deliver_verdict(verdict.answers)
            score = verdict.answers["useful"].p or 0.0
            deliver = judged == "deliver" and self.modes["deliver"] == "active"
            row = self._row(
                "deliver", "deliver" if deliver else "skip", verdict, judged, score=score, **fields
            )
            return DeliverResult(row, deliver, score, False)
        except Exception as e:  # a bug here must cost one delivery, not the run
            log.warning("deliver gate failed on %s → %s: %s", note.id, to_bee, e)
            return DeliverResult(None, False, 0.0, False)

    # ----------------------------------------------------------------------- relate

    async def relate(self, earlier: Note, later: Note) -> RelateResult:
        """What does ``later`` say about ``earlier``? Unsure or failed: no relation, so no note is removed."""
        same_bee = earlier.bee == later.bee
        try:
            if self.modes["relate"] == "off":
                return RelateResult(None, None, 0.0)
            state = {
                "earlier": render_note(earlier),
                "later": render_note(later),
                "same_bee": same_bee,
                "goal": self.goal,
            }
            question = RELATION_SAME_BEE if same_bee else RELATION_CROSS_BEE
            verdict = await self.judge.ask("relate", (question,), state)
            judged = relate_verdict(verdict.answers, same_bee=same_bee)
            relation: RelationKind | None = None
            score = 0.0
            if judged is not None and self.modes["relate"] == "active":
                relation, score = judged
            row = self._row(
                "relate",
                relation or "none",
                verdict,
                (judged[0] or "none") if judged else None,
                earlier=earlier.id,
                later=later.id,
                bee=later.bee,
                score=score,
            )
            return RelateResult(row, relation, score)
        except Exception as e:  # a bug here must never remove a note
            log.warning("relate gate failed on %s → %s: %s", later.id, earlier.id, e)
            return RelateResult(None, None, 0.0)

    # ----------------------------------------------------------------------- answer

    async def answer(self, note: Note) -> AnswerResult:
        """Does ``note`` answer the goal, so every bee can stop? Unsure or failed: the hive goes on."""
        try:
            state = {"note": note.text, "kind": note.kind, "bee": note.bee, "goal": self.goal}
            verdict = await self.judge.ask(ANSWER_GATE, (ANSWERS,), state)
            judged = answer_verdict(verdict.answers)
            score = verdict.answers["answers"].p or 0.0
            row = self._row(
                ANSWER_GATE,
                judged or "continue",
                verdict,
                judged,
                note=note.id,
                bee=note.bee,
                kind=note.kind,
                score=score,
            )
            return AnswerResult(row, judged == "answered", score)
        except Exception as e:  # a bug here must cost the early stop, not the run
            log.warning("answer gate failed on %s: %s", note.id, e)
            return AnswerResult(None, False, 0.0)
