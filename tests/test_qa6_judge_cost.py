"""QA round 6: a priced judge call too cheap for four decimals shows as under a hundredth of a cent, not as a
free $0.0000 (one gpt-4.1-nano judge call costs about $0.00003)."""

from __future__ import annotations

import math

import pytest

from hive.cli import main
from hive.observe.reading import dollars
from hive.testing import LocalHTTPServer


def test_a_cost_that_rounds_to_nothing_is_not_shown_as_nothing() -> None:
    assert dollars(0.00003) == "<$0.0001"
    assert dollars(0.00006) == "$0.0001"
    assert dollars(0.0) == "$0.0000"  # a priced call that used no tokens did cost nothing
    assert dollars(2.5) == "$2.50"


def test_judge_ask_on_a_cheap_priced_model_does_not_say_it_was_free(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    top = [{"token": "Y", "logprob": math.log(0.95)}, {"token": "N", "logprob": math.log(0.05)}]
    choice = {"message": {"role": "assistant", "content": "Y"},
              "logprobs": {"content": [{"token": "Y", "logprob": math.log(0.95), "top_logprobs": top}]}}
    with LocalHTTPServer() as server:
        usage = {"prompt_tokens": 300, "completion_tokens": 2}
        server.reply({"model": "gpt-4.1-nano", "choices": [choice], "usage": usage})
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
        code = main(["judge", "ask", "deliver", "--note", "FOUND: the cache key omits the tenant id",
                     "--focus", "tenancy", "--judge", "llm:openai:gpt-4.1-nano"])
    out = capsys.readouterr().out
    assert code == 0, out
    tier_line = next(line for line in out.splitlines() if line.strip().startswith("tier llm:openai:gpt-4.1-nano"))
    assert tier_line.endswith("302 tokens · <$0.0001"), tier_line

