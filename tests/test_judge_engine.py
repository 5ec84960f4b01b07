"""The cascade: trust, escalation, skipping failed tiers, neutral answers, reasons, never raising."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from hive.judge.base import RawAnswer, TierFailure, TierResult
from hive.judge.engine import Judge, state_digest
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question

NEWS = BooleanQuestion("news", "Is `note` news?")
KIND = ChoiceQuestion("kind", "What is `note`?", {"fact": "a fact", "other": "anything else"}, escape="other")
LINK = ChoiceQuestion(
    "link",
    "How is `a` linked to `b`?",
    {"same": "the same", "none": "unlinked"},
    escape="none",
    capability="relate",
)
STATE = {"note": "the cache key ignores the locale", "goal": "find the bug"}


class FixedTier:
    """A tier double: answers from a table, or raises, or hangs; records what it was asked."""

    def __init__(
        self,
        id: str,
        answers: Mapping[str, RawAnswer] | None = None,
        *,
        fail: BaseException | None = None,
        hang: bool = False,
        untrusted: frozenset[str] = frozenset(),
        timeout: float = 1.0,
        tokens: int = 0,
    ) -> None:
        self.id = id
        self.answers = dict(answers or {})
        self.fail = fail
        self.hang = hang
        self.untrusted = untrusted
        self.timeout = timeout
        self.tokens = tokens
        self.asked: list[list[str]] = []
        self.closed = False

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        self.asked.append([q.name for q in questions])
        if self.hang:
            await asyncio.Event().wait()
        if self.fail is not None:
            raise self.fail
        return TierResult(
            {q.name: self.answers[q.name] for q in questions if q.name in self.answers}, tokens=self.tokens
        )

    async def aclose(self) -> None:
        self.closed = True


def yes(p: float = 0.9) -> RawAnswer:
    return RawAnswer(p=p)


def fact(p: float) -> RawAnswer:
    return RawAnswer(probs={"fact": p, "other": 1 - p})


async def test_confident_answers_are_kept_and_unsure_ones_escalate() -> None:
    cheap = FixedTier("cheap", {"news": yes(0.95), "kind": fact(0.5)}, tokens=3)
    strong = FixedTier("strong", {"news": yes(0.1), "kind": fact(0.9)}, tokens=7)
    verdict = await Judge([cheap, strong]).ask("publish", [NEWS, KIND], STATE)
    assert strong.asked == [["kind"]]
    assert verdict.answers["news"].tier == "cheap" and verdict.answers["news"].zone == "yes"
    assert verdict.answers["kind"].tier == "strong" and verdict.answers["kind"].pick == "fact"
    assert [(c.tier, c.asked, c.kept) for c in verdict.tiers] == [
        ("cheap", ["news", "kind"], ["news"]),
        ("strong", ["kind"], ["kind"]),
    ]
    assert verdict.tokens == 10 and verdict.reason is None
    assert verdict.deciding_tier == "cheap+strong"
    assert verdict.state_digest == state_digest(STATE)


async def test_an_unsure_answer_stays_when_the_stronger_tier_is_down() -> None:
    cheap = FixedTier("cheap", {"news": yes(0.6)})
    down = FixedTier("down", fail=TierFailure("unreachable", "refused"))
    verdict = await Judge([cheap, down]).ask("publish", [NEWS], STATE)
    assert verdict.answers["news"].tier == "cheap" and verdict.answers["news"].zone == "unsure"
    assert verdict.tiers[1].error == "error:unreachable"
    assert verdict.reason == "error:unreachable"  # the tier that would have decided is down


async def test_the_last_tiers_unsure_answer_replaces_an_earlier_one() -> None:
    verdict = await Judge([FixedTier("a", {"news": yes(0.6)}), FixedTier("b", {"news": yes(0.4)})]).ask(
        "publish", [NEWS], STATE
    )
    assert (verdict.answers["news"].tier, verdict.answers["news"].p) == ("b", 0.4)
    assert [c.kept for c in verdict.tiers] == [[], ["news"]]


async def test_a_confident_escape_is_settled() -> None:
    strong = FixedTier("strong", {"kind": fact(0.95)})
    verdict = await Judge([FixedTier("cheap", {"kind": fact(0.1)}), strong]).ask("publish", [KIND], STATE)
    assert verdict.answers["kind"].zone == "escape"
    assert strong.asked == []


@pytest.mark.parametrize(
    ("tier", "reason"),
    [
        (FixedTier("t", fail=TierFailure("auth", "401")), "error:auth"),
        (FixedTier("t", fail=RuntimeError("bug")), "error:unexpected"),
        (FixedTier("t", hang=True, timeout=0.05), "error:timeout"),
        (FixedTier("t", {"news": RawAnswer(p=float("nan"))}), "error:invalid_response"),
        (FixedTier("t", {"news": RawAnswer(probs={"yes": 1.0})}), "error:invalid_response"),
    ],
)
async def test_a_failing_tier_gives_a_neutral_answer_and_a_reason(tier: FixedTier, reason: str) -> None:
    verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert verdict.reason == reason
    assert verdict.answers["news"].zone == "unsure" and verdict.answers["news"].tier == "none"
    assert verdict.tiers[0].error == reason


async def test_a_dead_first_tier_is_skipped() -> None:
    verdict = await Judge(
        [FixedTier("dead", fail=TierFailure("server")), FixedTier("ok", {"news": yes()})]
    ).ask("publish", [NEWS], STATE)
    assert verdict.answers["news"].tier == "ok" and verdict.answers["news"].zone == "yes"
    assert verdict.reason is None
    assert [c.error for c in verdict.tiers] == ["error:server", None]


async def test_a_transient_failure_names_the_reason_over_a_lasting_one() -> None:
    tiers = [
        FixedTier("a", fail=TierFailure("auth")),
        FixedTier("b", fail=TierFailure("rate_limited")),
        FixedTier("c", fail=TierFailure("server")),
    ]
    assert (await Judge(tiers).ask("publish", [NEWS], STATE)).reason == "error:rate_limited"
    lasting = [FixedTier("a", fail=TierFailure("bad_request")), FixedTier("b", fail=TierFailure("auth"))]
    assert (await Judge(lasting).ask("publish", [NEWS], STATE)).reason == "error:bad_request"


async def test_untrusted_questions_go_to_the_tier_that_is_trusted() -> None:
    cheap = FixedTier(
        "cheap",
        {"news": yes(), "link": RawAnswer(probs={"same": 0.9, "none": 0.1})},
        untrusted=frozenset({"relate"}),
    )
    strong = FixedTier("strong", {"link": RawAnswer(probs={"same": 0.2, "none": 0.8})})
    verdict = await Judge([cheap, strong]).ask("g", [NEWS, LINK], STATE)
    assert cheap.asked == [["news"]] and strong.asked == [["link"]]
    assert verdict.answers["link"].tier == "strong"


async def test_a_question_can_be_untrusted_by_name() -> None:
    cheap = FixedTier("cheap", {"news": yes(), "kind": fact(0.9)}, untrusted=frozenset({"kind"}))
    verdict = await Judge([cheap]).ask("publish", [NEWS, KIND], STATE)
    assert cheap.asked == [["news"]]
    assert verdict.answers["kind"].tier == "untrusted" and verdict.answers["kind"].zone == "unsure"
    assert verdict.reason is None


async def test_a_question_no_tier_trusts_gets_a_neutral_answer() -> None:
    cheap = FixedTier(
        "cheap", {"link": RawAnswer(probs={"same": 0.9, "none": 0.1})}, untrusted=frozenset({"relate"})
    )
    verdict = await Judge([cheap]).ask("relate", [LINK], STATE)
    assert cheap.asked == []
    assert verdict.answers["link"].tier == "untrusted" and verdict.answers["link"].zone == "unsure"
    assert verdict.reason == "abstain" and verdict.tiers == []


async def test_an_abstaining_tier_leaves_a_neutral_answer() -> None:
    verdict = await Judge([FixedTier("quiet", {})]).ask("publish", [NEWS], STATE)
    assert verdict.reason == "abstain"
    assert verdict.answers["news"].tier == "none"


async def test_a_failure_explains_an_empty_verdict_better_than_a_later_abstention() -> None:
    verdict = await Judge([FixedTier("slow", hang=True, timeout=0.05), FixedTier("quiet", {})]).ask(
        "publish", [NEWS], STATE
    )
    assert verdict.reason == "error:timeout"
    assert [c.error for c in verdict.tiers] == ["error:timeout", None]


async def test_cancellation_is_not_swallowed() -> None:
    judge = Judge([FixedTier("slow", hang=True, timeout=60)])
    task = asyncio.create_task(judge.ask("publish", [NEWS], STATE))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_digest_is_canonical_and_aclose_closes_every_tier() -> None:
    assert state_digest({"a": 1, "b": "x"}) == state_digest({"b": "x", "a": 1})
    assert state_digest({"a": 1}) != state_digest({"a": 2})
    tiers = [FixedTier("a"), FixedTier("b")]
    await Judge(tiers).aclose()
    assert all(t.closed for t in tiers)
