"""The llm tier over an OpenAI-compatible server that answers a logprob request without alternatives."""

from __future__ import annotations

import json
from typing import Any

import httpx

from hive.gates import PUBLISH_QUESTIONS
from hive.judge.engine import Judge
from hive.judge.tiers.llm import LlmTier
from hive.providers.openai import OpenAIChatModel

STATE = {"note": "Running the script reproduces the TypeError", "goal": "fix the export", "focus": "", "bee": "bee-1"}


async def test_empty_top_logprobs_are_no_logprobs_and_the_tier_answers_in_json() -> None:
    """Such a server gives each sampled token's logprob and an empty list of alternatives: there is no
    distribution to read, and reading one anyway failed every call of the run with invalid_response."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        bodies.append(body)
        if body.get("logprobs"):
            content = [{"token": "Y", "logprob": -0.1, "top_logprobs": []},
                       {"token": " A", "logprob": -0.2, "top_logprobs": []}]
            choice = {"message": {"role": "assistant", "content": "Y A"}, "logprobs": {"content": content}}
        else:
            text = '{"news": {"p": 0.9}, "kind": {"pick": "finding", "p": 0.8}}'
            choice = {"message": {"role": "assistant", "content": text}}
        return httpx.Response(200, json={"choices": [choice], "usage": {"prompt_tokens": 90, "completion_tokens": 10}})

    tier = LlmTier(OpenAIChatModel("qwen", provider="openai-compat", base_url="http://127.0.0.1:9/v1",
                                   transport=httpx.MockTransport(handler)), id="llm:openai-compat:qwen")
    judge = Judge([tier])
    first = await judge.ask("publish", PUBLISH_QUESTIONS, STATE)
    assert first.reason is None and first.tokens == 200
    assert first.answers["news"].verbalized and first.answers["kind"].pick == "finding"
    assert tier.logprobs is False
    second = await judge.ask("publish", PUBLISH_QUESTIONS, STATE)
    assert second.reason is None and len(bodies) == 3 and "logprobs" not in bodies[2]  # JSON from then on
