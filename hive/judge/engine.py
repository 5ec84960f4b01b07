"""The engine: a fail-open cascade of tiers that turns questions about a state into a :class:`Verdict`.

Per call, tiers are tried in order, cheapest first:

- a tier is asked only the still-open questions it is trusted on (see :func:`hive.judge.base.trusts`);
- a confident answer (yes, no, a pick, the escape) settles its question; an unsure one is kept for now
  and escalates to the next tier, whose answer replaces it;
- a tier that fails (a :class:`TierFailure`, its timeout, any other exception) is skipped, and its
  ``error:<kind>`` is recorded on its :class:`TierCall`;
- a question no tier may answer gets a neutral answer from tier ``untrusted``; one that every trusted tier
  failed or abstained on gets a neutral answer from tier ``none``. The policy reads both as unsure;
- a question left unsure after a tier asked about it failed has that failure as the verdict's ``reason``:
  the failing tier is the one that would have decided it (with ``local,llm:...`` the model is asked only what
  ``local`` was unsure of, so its timeouts would otherwise never show as a reason).

:meth:`Judge.ask` never raises except for cancellation: whatever goes wrong becomes the verdict's
``reason`` and the gate falls back. The judge keeps no state between calls.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from hive.judge.base import Tier, TierFailure, trusts
from hive.judge.policy import NO_TIER, UNTRUSTED_TIER, is_confident, neutral_answer, to_answer, validate
from hive.judge.questions import Question
from hive.providers.base import add_cost
from hive.records import Answer, TierCall

log = logging.getLogger("hive.judge")

TRANSIENT_FAILURES = frozenset({"timeout", "unreachable", "rate_limited", "server"})
"""Failure kinds that may pass by themselves; when every tier fails, the first of these names the reason."""


@dataclass(frozen=True)
class Verdict:
    """What the judge said about one state: the kept answers and how they were obtained."""

    answers: dict[str, Answer]
    """question name → the kept answer (neutral when nobody answered)."""
    tiers: list[TierCall] = field(default_factory=list)
    latency_ms: float = 0.0
    tokens: int = 0
    cost_usd: float | None = None
    """What the tiers' tokens cost, where a price is known (an ``llm:`` tier on a priced model)."""
    reason: str | None = None
    """Why the verdict may not decide: ``error:<kind>`` when a tier asked about a question that is still unsure
    failed (whether or not a weaker tier's unsure answer was kept); otherwise ``abstain`` when no tier answered;
    ``None`` when tiers answered and none of the unsure questions met a failure."""
    state_digest: str = ""

    @property
    def deciding_tier(self) -> str | None:
        """The tier whose answers were kept; several joined by ``+``; ``None`` if no tier answered."""
        kept = [call.tier for call in self.tiers if call.kept]
        return "+".join(kept) if kept else None


def state_digest(state: Mapping[str, Any]) -> str:
    """sha256 of the state as canonical JSON (sorted keys, no spaces)."""
    try:
        data = orjson.dumps(state, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:
        data = repr(sorted(state.items(), key=lambda item: str(item[0]))).encode()
    return hashlib.sha256(data).hexdigest()


def _reason_of_failures(failures: Sequence[str]) -> str:
    transient = [kind for kind in failures if kind in TRANSIENT_FAILURES]
    return f"error:{(transient or list(failures))[0]}"


class Judge:
    """An ordered list of tiers, cheapest first. Build it once per process; close it with :meth:`aclose`."""

    def __init__(self, tiers: Sequence[Tier]) -> None:
        self.tiers: list[Tier] = list(tiers)

    @property
    def spec(self) -> list[str]:
        """The tier ids, in cascade order (what ``--judge`` said)."""
        return [tier.id for tier in self.tiers]

    async def load(self) -> float:
        """Load now what tiers otherwise load on their first question (the local model), so that no decision's
        latency includes it. Returns the milliseconds it took. Never raises: a tier that cannot load fails
        open when it is asked, as it would have without this."""
        started = time.perf_counter()
        for tier in self.tiers:
            load = getattr(tier, "load", None)
            if not callable(load):
                continue
            try:
                await asyncio.to_thread(load)
            except Exception as e:  # reported (and failed open) by the first question that needs it
                log.warning("judge: loading tier %s: %s", tier.id, e)
        return (time.perf_counter() - started) * 1000

    async def ask(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> Verdict:
        """Ask ``questions`` about ``state`` for ``gate``. Never raises, except on cancellation."""
        started = time.perf_counter()
        digest = state_digest(state)
        try:
            verdict = await self._cascade(gate, questions, state)
        except Exception as e:  # the cascade guards each tier; this is the last line of fail-open
            log.warning("judge: %s: unexpected error: %s", gate, e)
            answers = {q.name: neutral_answer(q, NO_TIER) for q in questions}
            verdict = Verdict(answers=answers, reason="error:unexpected")
        latency = (time.perf_counter() - started) * 1000
        return replace(verdict, latency_ms=latency, state_digest=digest)

    async def _cascade(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> Verdict:
        answers: dict[str, Answer] = {}
        kept_by: dict[str, int] = {}
        settled: set[str] = set()
        calls: list[dict[str, Any]] = []
        failures: list[tuple[str, list[str]]] = []  # (failure kind, what the failing tier was asked), in order
        tokens = 0
        cost: float | None = None
        for index, tier in enumerate(self.tiers):
            asking = [q for q in questions if q.name not in settled and trusts(tier, q)]
            if not asking:
                continue
            call: dict[str, Any] = {"index": index, "tier": tier.id, "asked": [q.name for q in asking]}
            calls.append(call)
            tier_started = time.perf_counter()
            try:
                got, used_tokens, used_cost = await self._ask_tier(tier, gate, asking, state)
            except TierFailure as e:
                call["error"] = f"error:{e.kind}"
                failures.append((e.kind, call["asked"]))
                log.debug("judge: %s: tier %s failed: %s", gate, tier.id, e)
                got, used_tokens, used_cost = {}, e.tokens, e.cost_usd
            except TimeoutError:
                call["error"] = "error:timeout"
                failures.append(("timeout", call["asked"]))
                got, used_tokens, used_cost = {}, 0, None
            except Exception as e:  # a tier's bug must not take the pipeline down
                call["error"] = "error:unexpected"
                failures.append(("unexpected", call["asked"]))
                log.warning("judge: %s: tier %s raised %s: %s", gate, tier.id, type(e).__name__, e)
                got, used_tokens, used_cost = {}, 0, None
            call["latency_ms"] = (time.perf_counter() - tier_started) * 1000
            call["tokens"], call["cost_usd"] = used_tokens, used_cost
            tokens += used_tokens
            cost = add_cost(cost, used_cost)
            for name, answer in got.items():
                answers[name] = answer
                kept_by[name] = index
                if is_confident(answer):
                    settled.add(name)
        for question in questions:
            if question.name in answers:
                continue
            trusted = any(trusts(tier, question) for tier in self.tiers)
            answers[question.name] = neutral_answer(question, NO_TIER if trusted else UNTRUSTED_TIER)
        tier_calls = [
            TierCall(
                tier=call["tier"],
                asked=call["asked"],
                kept=[name for name, index in kept_by.items() if index == call["index"]],
                latency_ms=call["latency_ms"],
                tokens=call["tokens"],
                cost_usd=call["cost_usd"],
                error=call.get("error"),
            )
            for call in calls
        ]
        # A tier that failed on a question still open explains the unsure verdict better than a weaker tier's
        # unsure answer kept before it, or a later tier that had nothing to say.
        open_failures = [kind for kind, asked in failures if not settled.issuperset(asked)]
        reason: str | None = None
        if open_failures:
            reason = _reason_of_failures(open_failures)
        elif not kept_by:
            reason = "abstain"
        ordered = {q.name: answers[q.name] for q in questions}
        return Verdict(answers=ordered, tiers=tier_calls, tokens=tokens, cost_usd=cost, reason=reason)

    @staticmethod
    async def _ask_tier(
        tier: Tier, gate: str, asking: Sequence[Question], state: Mapping[str, Any]
    ) -> tuple[dict[str, Answer], int, float | None]:
        async with asyncio.timeout(tier.timeout):
            result = await tier.answer(gate, asking, state)
        got: dict[str, Answer] = {}
        try:
            for question in asking:
                raw = result.answers.get(question.name)
                if raw is not None:
                    got[question.name] = to_answer(question, validate(question, raw), tier.id)
        except TierFailure as e:
            e.tokens, e.cost_usd = result.tokens, result.cost_usd  # an unusable answer was still paid for
            raise
        return got, result.tokens, result.cost_usd

    async def aclose(self) -> None:
        """Close every tier (HTTP clients, model sessions)."""
        for tier in self.tiers:
            try:
                await tier.aclose()
            except Exception as e:  # closing is best effort; one tier must not keep others open
                log.warning("judge: closing tier %s: %s", tier.id, e)
