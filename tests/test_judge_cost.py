"""What a priced ``llm:`` judge costs reaches the ledger (``cost_usd`` on the row and on its tier call), the
audit's totals, the live view and ``hive judge eval``; an unpriced one stays unknown, never $0."""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import httpx
import pytest

from hive.judge.engine import Judge
from hive.judge.evaluate import PublishItem, evaluate
from hive.judge.questions import BooleanQuestion, ChoiceQuestion
from hive.judge.tiers.llm import LlmTier
from hive.observe.audit import compute_audit, format_audit, gate_figures
from hive.observe.live import LiveState, Spent, panel_lines
from hive.providers.openai import OpenAIChatModel
from hive.records import GateDecision, RunInfo
from hive.store import dumps

NEWS = BooleanQuestion("news", "Is `note` news?")
KIND = ChoiceQuestion("kind", "What is `note`?", {"finding": "a fact", "other": "else"}, escape="other")
STATE = {"note": "pip cannot reach the index, so numpy is missing", "goal": "fix the build"}
PER_TOKEN = {"gpt-4.1-mini": (0.40e-6, 1.60e-6)}


def server(reply_text: str, *, logprobs: bool = False) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        choice: dict[str, Any] = {"message": {"role": "assistant", "content": reply_text}}
        if logprobs and body.get("logprobs"):
            alternatives = [{"token": "Y", "logprob": math.log(0.9)}, {"token": "N", "logprob": math.log(0.1)}]
            choice["logprobs"] = {"content": [{"token": "Y", "logprob": math.log(0.9), "top_logprobs": alternatives}]}
        return httpx.Response(200, json={"model": body["model"], "choices": [choice],
                                         "usage": {"prompt_tokens": 1000, "completion_tokens": 100}})

    return httpx.MockTransport(handler)


def cost_of(model: str, prompt: int, completion: int) -> float:
    per_in, per_out = PER_TOKEN[model]
    return prompt * per_in + completion * per_out


async def test_a_priced_model_s_cost_is_on_the_verdict_and_its_tier_call() -> None:
    tier = LlmTier(OpenAIChatModel("gpt-4.1-mini", api_key="k", transport=server("Y", logprobs=True)))
    verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert verdict.reason is None and verdict.tokens == 1100
    assert verdict.cost_usd == pytest.approx(cost_of("gpt-4.1-mini", 1000, 100))
    assert verdict.tiers[0].cost_usd == pytest.approx(verdict.cost_usd)


async def test_an_unusable_answer_still_costs_what_was_paid_for() -> None:
    tier = LlmTier(OpenAIChatModel("gpt-4.1-mini", api_key="k", transport=server("no JSON here")))
    tier.logprobs = False
    verdict = await Judge([tier]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.reason == "error:invalid_response"
    assert verdict.cost_usd == pytest.approx(cost_of("gpt-4.1-mini", 1000, 100))


async def test_an_unpriced_server_s_cost_is_unknown_not_zero() -> None:
    model = OpenAIChatModel("m", provider="openai-compat", base_url="http://127.0.0.1:9/v1", api_key=None,
                            transport=server('{"news": {"p": 0.9}}'))
    tier = LlmTier(model)
    tier.logprobs = False
    verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert verdict.tokens == 1100 and verdict.cost_usd is None and verdict.tiers[0].cost_usd is None


def decision(number: int, cost: float | None) -> GateDecision:
    return GateDecision(id=f"g-{number:06d}", gate="publish", outcome="withhold", source="judge", tokens=1100,
                        cost_usd=cost)


def test_the_audit_and_the_live_view_add_the_judge_s_cost_to_the_run_s() -> None:
    decisions = [decision(1, 0.25), decision(2, None), decision(3, 0.5)]
    assert gate_figures(decisions).cost_usd == pytest.approx(0.75)
    assert gate_figures([decision(1, None)]).cost_usd is None
    info = RunInfo(id="r", problem="p", repo="/r")
    assert compute_audit(info, [], decisions).totals.cost_usd == pytest.approx(0.75)
    assert compute_audit(info, [], [decision(1, None)]).totals.cost_usd is None
    state = LiveState.from_info(info)
    for d in decisions:
        state.apply(d)
    assert (state.tokens, state.cost_usd) == (3300, pytest.approx(0.75))


def test_a_ledger_row_without_a_price_leaves_the_field_out() -> None:
    assert "cost_usd" not in json.loads(dumps(decision(1, None)))
    assert GateDecision.model_validate_json(dumps(decision(1, 0.25))).cost_usd == 0.25


async def test_eval_reports_what_the_judge_cost() -> None:
    from hive.gates import Gates

    tier = LlmTier(OpenAIChatModel("gpt-4.1-mini", api_key="k", transport=server(
        '{"news": {"p": 0.9}, "kind": {"pick": "finding", "p": 0.9}}')))
    tier.logprobs = False
    items = [PublishItem(text="FOUND: numpy is missing because pip cannot reach the index", kind="finding",
                         news=True) for _ in range(2)]
    report = await evaluate(Gates(Judge([tier]), goal="fix the build"), "publish", items)
    assert report["tokens"] == 2200 and report["cost_usd"] == pytest.approx(2 * cost_of("gpt-4.1-mini", 1000, 100))


def test_a_cost_that_leaves_unpriced_calls_out_says_so() -> None:
    info = RunInfo(id="r", problem="p", repo="/r")
    mixed = compute_audit(info, [], [decision(1, 0.25), decision(2, None)])
    assert (mixed.totals.cost_usd, mixed.totals.unpriced_tokens) == (0.25, 1100)
    assert any(line.endswith("cost $0.2500 + 1100 tokens without a known price") for line in format_audit(mixed))
    priced = compute_audit(info, [], [decision(1, 0.25)])
    assert priced.totals.unpriced_tokens == 0
    assert any(line.endswith("cost $0.2500") for line in format_audit(priced))
    state = LiveState.from_info(info)
    state.apply(Spent(tokens=30, cost_usd=0.5))
    state.apply(Spent(tokens=12_000))
    header = " ".join(text for text, _ in panel_lines(state, 200, dt.datetime.now(dt.UTC)))
    assert "$0.5000 + 12.0k tokens unpriced" in header
