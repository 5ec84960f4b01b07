"""``LocalTier``: the default judge tier, offline, on the CPU, no API key.

It answers publish (``news``, ``kind``), deliver (``useful``) and relate (``relation``) from cached sentence
embeddings and the calibrated heads in ``data/heads.npz``.

What it does not claim: telling ``supersedes``, ``contradicts`` and ``supports`` apart needs real
language understanding. For ``relation`` it only decides related-vs-``none``: an unrelated pair gets a
confident ``none``; for a related pair the related mass is spread evenly over the three relations, so no
option reaches the 0.6 pick bar, the answer stays unsure and the cascade hands it to the next tier (or the
gate keeps its fallback: no relation). :attr:`LocalTier.unsure_by_design` names that part, and every such
answer says so in ``TierResult.meta``.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from hive.judge.base import RawAnswer, TierFailure, TierResult, note_text
from hive.judge.local.embedder import Embedder, LocalModelError
from hive.judge.local.heads import KINDS, Heads, deliver_inputs, load_heads, publish_inputs, relate_inputs
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question

GATE_FIELDS: dict[str, tuple[str, ...]] = {
    "publish": ("note",),
    "deliver": ("note", "focus"),
    "relate": ("earlier", "later"),
}
RELATIONS = ("supersedes", "contradicts", "supports")


class LocalTier:
    """The ``local`` judge tier. Cheap to construct; the model loads on first use (or :meth:`load`)."""

    id = "local"
    untrusted: frozenset[str] = frozenset()
    """Nothing is refused outright: ``relation`` is answered, but only as related-vs-none (see below)."""
    unsure_by_design: Mapping[str, tuple[str, ...]] = {"relation": RELATIONS}
    """question → options this tier never picks; it spreads their mass so the answer stays unsure."""

    def __init__(self, timeout: float = 10.0, embedder: Embedder | None = None, heads: Heads | None = None) -> None:
        self.timeout = timeout
        self.embedder = embedder or Embedder()
        self._heads = heads
        self._heads_lock = threading.Lock()
        self._note_probs: dict[str, dict[str, float]] = {}

    @property
    def heads(self) -> Heads:
        with self._heads_lock:
            if self._heads is None:
                self._heads = load_heads()
            return self._heads

    def load(self) -> None:
        """Load the model and the heads now (otherwise the first question does)."""
        self.embedder.load()
        _ = self.heads

    def similarity(self, a: str, b: str) -> float:
        """Cosine similarity of two texts' cached embeddings (for choosing relate candidates)."""
        return self.embedder.similarity(note_text(a), note_text(b))

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        """Answer the questions of one item. Questions this tier has no head for are left out (abstained)."""
        fields = GATE_FIELDS.get(gate)
        if fields is None:
            return TierResult(answers={})
        missing = [name for name in fields if not isinstance(state.get(name), str) or not state[name].strip()]
        if missing:
            raise TierFailure("bad_request", f"{gate} state lacks text for {', '.join(missing)}")
        try:
            if all(self.embedder.cached(text) for text in self._texts(gate, state)):
                # Cached embeddings leave only the heads (well under a millisecond): a thread hop would cost more.
                return self.answer_now(gate, questions, state)
            return await asyncio.to_thread(self.answer_now, gate, questions, state)
        except LocalModelError as exc:
            raise TierFailure("unexpected", str(exc)) from exc

    @staticmethod
    def _texts(gate: str, state: Mapping[str, Any]) -> list[str]:
        """The texts :meth:`answer_now` embeds for ``gate``."""
        if gate == "publish":
            return [state["note"]]
        if gate == "deliver":
            return [state["note"], state["focus"]]
        return [note_text(state["earlier"]), note_text(state["later"])]

    def answer_now(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        """The synchronous core of :meth:`answer` (blocking: runs the model on uncached texts)."""
        wanted = {q.name: q for q in questions}
        answers: dict[str, RawAnswer] = {}
        meta: dict[str, Any] = {}
        if gate == "publish":
            probs = self.note_probs(state["note"])
            if isinstance(wanted.get("news"), BooleanQuestion):
                answers["news"] = RawAnswer(p=probs["news"])
            kind = wanted.get("kind")
            if isinstance(kind, ChoiceQuestion) and set(kind.options) == {*KINDS[1:], kind.escape}:
                answers["kind"] = RawAnswer(probs={kind.escape if k == "other" else k: probs[k] for k in KINDS})
        elif gate == "deliver" and isinstance(wanted.get("useful"), BooleanQuestion):
            note, focus = state["note"], state["focus"]
            self.embedder.embed([note, focus])
            x = deliver_inputs(self.embedder.similarity(note, focus), note, focus, self.note_probs(note))
            answers["useful"] = RawAnswer(p=float(self.heads.useful.predict(np.array(x))[0]))
        elif gate == "relate":
            relation = wanted.get("relation")
            if isinstance(relation, ChoiceQuestion) and set(relation.options) == {*RELATIONS, relation.escape}:
                p_related = self.related_probability(state["earlier"], state["later"], bool(state.get("same_bee")))
                spread = p_related / len(RELATIONS)
                answers["relation"] = RawAnswer(
                    probs={relation.escape: 1.0 - p_related, **{option: spread for option in RELATIONS}}
                )
                meta["unsure_by_design"] = {"relation": list(RELATIONS), "p_related": round(p_related, 4)}
        return TierResult(answers=answers, meta=meta)

    def note_probs(self, text: str) -> dict[str, float]:
        """Calibrated kind probabilities (``other`` = routine) and ``news`` for one note, cached by text."""
        cached = self._note_probs.get(text)
        if cached is not None:
            return cached
        (vector,) = self.embedder.embed([text])
        x = publish_inputs([vector], [text])
        kind = self.heads.kind.predict(x)[0]
        probs = {k: float(kind[i]) for i, k in enumerate(KINDS)}
        probs["news"] = float(self.heads.news.predict(x)[0])
        if len(self._note_probs) > 4096:
            self._note_probs.clear()
        self._note_probs[text] = probs
        return probs

    def related_probability(self, earlier: str, later: str, same_bee: bool) -> float:
        """Probability that ``later`` bears on ``earlier`` at all (supersedes, contradicts or supports)."""
        a, b = note_text(earlier), note_text(later)
        self.embedder.embed([a, b])
        x = relate_inputs(self.embedder.similarity(a, b), a, b, same_bee, self.note_probs(a), self.note_probs(b))
        return float(self.heads.related.predict(np.array(x))[0])

    async def aclose(self) -> None:
        """Nothing to release: the ONNX session is freed with the object."""
