"""Tier specs and the http, script and llm tiers, each through the real engine."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import httpx
import pytest
from judge_http_server import closed_port, judge_server

from hive.errors import ModelAPIError, SpecError, UsageError
from hive.judge.base import RawAnswer, TierFailure
from hive.judge.engine import Judge
from hive.judge.modes import gate_modes, parse_gate_modes
from hive.judge.questions import BooleanQuestion, ChoiceQuestion
from hive.judge.tiers import build_tiers, parse_tiers, resolve_tier_spec
from hive.judge.tiers.http import HttpTier
from hive.judge.tiers.llm import REASONING_ALLOWANCE, LlmTier, find_json_object, parse_verbalized
from hive.judge.tiers.script import ScriptTier
from hive.providers.anthropic import AnthropicModel
from hive.providers.base import Message, ModelResponse, ModelSettings, TokenUsage, ToolSpec
from hive.providers.openai import OpenAIChatModel

NEWS = BooleanQuestion("news", "Is `note` news?")
KIND = ChoiceQuestion(
    "kind", "What is `note`?", {"finding": "a fact", "blocker": "a stop", "other": "else"}, escape="other"
)
STATE = {"note": "pip cannot reach the index, so numpy is missing", "goal": "fix the build", "same_bee": True}


# --------------------------------------------------------------------------- specs and modes


def test_tier_specs_are_checked() -> None:
    assert parse_tiers(" local , llm:openai:gpt-4.1-mini,http:http://127.0.0.1:9/x,script:r.json") == [
        "local",
        "llm:openai:gpt-4.1-mini",
        "http:http://127.0.0.1:9/x",
        "script:r.json",
    ]
    assert parse_tiers("llm:ollama:qwen2.5:7b") == ["llm:ollama:qwen2.5:7b"]
    # A bare URL is the http tier, as people write it (and as the coordinator's docs do).
    assert parse_tiers("local,http://127.0.0.1:9/x,https://judge.example/v1") == [
        "local", "http:http://127.0.0.1:9/x", "http:https://judge.example/v1"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "local,",
        "jev",
        "local:fast",
        "llm:openai",
        "llm:nosuch:model",
        "http:ftp://x",
        "http:",
        "script:",
        "local,local",
        "http://127.0.0.1:9/x,http:http://127.0.0.1:9/x",
        "http://",
    ],
)
def test_bad_tier_specs_raise_one_line(text: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_tiers(text)
    assert "\n" not in str(caught.value)


def test_gate_modes_parse_and_layer() -> None:
    assert parse_gate_modes("publish=shadow, deliver=off") == {"publish": "shadow", "deliver": "off"}
    assert parse_gate_modes("shadow,relate=active") == {
        "publish": "shadow",
        "deliver": "shadow",
        "relate": "active",
    }
    assert gate_modes(environ={}) == {"publish": "active", "deliver": "active", "relate": "active"}
    layered = gate_modes(
        "deliver=active", config={"relate": "off"}, environ={"HIVE_GATE_MODE": "publish=shadow,deliver=off"}
    )
    assert layered == {"publish": "shadow", "deliver": "active", "relate": "off"}


@pytest.mark.parametrize("text", ["publish=loud", "gossip=off", "publish=shadow,,", "maybe"])
def test_bad_gate_modes_raise(text: str) -> None:
    with pytest.raises(SpecError):
        parse_gate_modes(text)


# --------------------------------------------------------------------------- http tier


async def test_http_tier_posts_state_and_questions_and_reads_answers() -> None:
    async with judge_server() as server:
        server.answers = {
            "news": {"p": 0.9},
            "kind": {"probs": {"finding": 0.1, "blocker": 0.8, "other": 0.1}},
            "extra": {"p": 0.3},
        }
        tier = HttpTier(server.url("/answers"))
        verdict = await Judge([tier]).ask("publish", [NEWS, KIND], STATE)
        await tier.aclose()
    assert verdict.answers["news"].zone == "yes" and verdict.answers["kind"].pick == "blocker"
    assert verdict.tokens == 5
    sent = server.requests[0]
    assert sent["gate"] == "publish" and sent["state"] == STATE
    assert [q["name"] for q in sent["questions"]] == ["news", "kind"]
    assert sent["questions"][1]["escape"] == "other" and "blocker" in sent["questions"][1]["options"]


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("/slow", "error:timeout"),
        ("/status/500", "error:server"),
        ("/status/503", "error:server"),
        ("/status/401", "error:auth"),
        ("/status/403", "error:auth"),
        ("/status/429", "error:rate_limited"),
        ("/status/404", "error:bad_request"),
        ("/garbage", "error:invalid_response"),
        ("/nan", "error:invalid_response"),
        ("/shape", "error:invalid_response"),
        ("/tokens", "error:invalid_response"),
        ("/deep", "error:invalid_response"),
    ],
)
async def test_http_failures_fail_open_with_their_kind(path: str, reason: str) -> None:
    async with judge_server() as server:
        tier = HttpTier(server.url(path), timeout=0.3)
        verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
        await tier.aclose()
    assert verdict.reason == reason
    assert verdict.answers["news"].zone == "unsure"


async def test_a_refused_connection_is_unreachable() -> None:
    tier = HttpTier(f"http://127.0.0.1:{closed_port()}/evaluate")
    verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
    await tier.aclose()
    assert verdict.reason == "error:unreachable"


# --------------------------------------------------------------------------- script tier


def write_rules(tmp_path: Path, rules: object) -> Path:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    return path


async def test_script_first_matching_rule_of_the_gate_wins(tmp_path: Path) -> None:
    path = write_rules(
        tmp_path,
        [
            {"gate": "deliver", "when": {"note": "numpy"}, "answers": {"news": 0.0}},
            {
                "gate": "publish",
                "when": {"note": "(?i)NUMPY is missing", "same_bee": "^true$"},
                "answers": {"news": 0.95, "kind": {"blocker": 0.9}},
            },
            {"gate": "publish", "answers": {"news": 0.1}},
        ],
    )
    tier = ScriptTier.from_file(path)
    verdict = await Judge([tier]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.answers["news"].p == 0.95
    assert verdict.answers["kind"].pick == "blocker"
    assert verdict.answers["kind"].probs == pytest.approx({"finding": 0.05, "blocker": 0.9, "other": 0.05})
    other = await Judge([tier]).ask("publish", [NEWS, KIND], {"note": "nothing here"})
    assert other.answers["news"].p == 0.1 and other.answers["kind"].tier == "none"


async def test_script_without_a_match_abstains(tmp_path: Path) -> None:
    tier = ScriptTier.from_file(
        write_rules(tmp_path, [{"gate": "publish", "when": {"note": "xyz"}, "answers": {"news": 1.0}}])
    )
    verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert verdict.reason == "abstain" and verdict.answers["news"].zone == "unsure"


async def test_script_answers_of_the_wrong_type_are_invalid(tmp_path: Path) -> None:
    tier = ScriptTier.from_file(write_rules(tmp_path, [{"gate": "publish", "answers": {"news": {"yes": 1.0}}}]))
    assert (await Judge([tier]).ask("publish", [NEWS], STATE)).reason == "error:invalid_response"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "is not JSON"),
        ('{"gate": "publish"}', "must be a JSON list"),
        ('[{"gate": "publish"}]', "answers"),
        ('[{"gate": "gossip", "answers": {}}]', "unknown gate"),
        ('[{"gate": "publish", "when": {"note": "("}, "answers": {}}]', "bad regex"),
        ('[{"gate": "publish", "answers": {"news": "high"}}]', "news"),
    ],
)
def test_a_bad_script_file_is_a_one_line_usage_error(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "rules.json"
    path.write_text(content)
    with pytest.raises(UsageError, match=message) as caught:
        ScriptTier.from_file(path)
    assert "\n" not in str(caught.value)
    with pytest.raises(UsageError, match="cannot read"):
        ScriptTier.from_file(tmp_path / "missing.json")


async def test_a_script_file_saved_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    path = tmp_path / "rules.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([{"gate": "publish", "answers": {"news": 0.9}}]).encode())
    verdict = await Judge([ScriptTier.from_file(path)]).ask("publish", [NEWS], STATE)
    assert verdict.answers["news"].zone == "yes"


def test_build_tiers_makes_the_cascade(tmp_path: Path) -> None:
    path = write_rules(tmp_path, [])
    tiers = build_tiers(parse_tiers(f"script:{path},http:http://127.0.0.1:9/x"))
    assert [t.id for t in tiers] == [f"script:{path}", "http:http://127.0.0.1:9/x"]
    assert [t.timeout for t in tiers] == [1.0, 8.0]


# --------------------------------------------------------------------------- llm tier


class CannedModel:
    """A Model double replying with canned responses in order, recording each request."""

    name = "canned:judge"

    def __init__(self, *replies: ModelResponse | Exception) -> None:
        self.replies = list(replies)
        self.requests: list[tuple[list[Message], ModelSettings | None]] = []

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        self.requests.append((messages, settings))
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

    async def aclose(self) -> None:
        return None


def logprob_reply(*positions: dict[str, float], text: str = "") -> ModelResponse:
    return ModelResponse(text=text, top_logprobs=tuple(positions), usage=TokenUsage(100, 3))


async def test_llm_tier_reads_probabilities_off_logprobs_in_one_request() -> None:
    model = CannedModel(
        logprob_reply(
            {"Y": math.log(0.7), " Y": math.log(0.1), "N": math.log(0.2)},
            {" ": 0.0},
            {" B": math.log(0.6), "B": math.log(0.2), " A": math.log(0.1), "Sure": math.log(0.1)},
            text="Y B",
        )
    )
    verdict = await Judge([LlmTier(model)]).ask("publish", [NEWS, KIND], STATE)
    assert len(model.requests) == 1
    messages, settings = model.requests[0]
    assert settings is not None and settings.top_logprobs and settings.temperature == 0
    assert "pip cannot reach the index" in messages[1].content and "B = blocker" in messages[1].content
    assert verdict.answers["news"].p == pytest.approx(0.8)
    assert verdict.answers["kind"].probs == pytest.approx({"finding": 0.1 / 0.9, "blocker": 0.8 / 0.9, "other": 0.0})
    assert not verdict.answers["news"].verbalized
    assert verdict.tokens == 103 and verdict.tiers[0].tier == "llm:canned:judge"


async def test_a_log_probability_above_zero_is_an_invalid_response() -> None:
    model = CannedModel(logprob_reply({"Y": 0.5, "N": -1.0}, {" B": 0.0}, text="Y B"))
    verdict = await Judge([LlmTier(model)]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.reason == "error:invalid_response" and verdict.answers["news"].zone == "unsure"


async def test_tokens_spent_on_an_unusable_answer_are_still_counted() -> None:
    broken = ModelResponse(text='{"news": {"p": 1.5}, "kind": {"pick": "finding", "p": 0.7}}',
                           usage=TokenUsage(90, 10))
    model = CannedModel(ModelResponse(text="Y A", usage=TokenUsage(100, 3)), broken)
    verdict = await Judge([LlmTier(model)]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.reason == "error:invalid_response"
    assert verdict.tiers[0].tokens == 203 and verdict.tokens == 203


async def test_llm_tier_falls_back_to_verbalized_json_and_remembers() -> None:
    json_reply = ModelResponse(text='Sure! ```json\n{"news": {"p": 0.85}, "kind": {"pick": "finding", "p": 0.7}}\n```')
    model = CannedModel(ModelResponse(text="Y A"), json_reply, json_reply)
    tier = LlmTier(model)
    verdict = await Judge([tier]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.answers["news"].verbalized and verdict.answers["news"].zone == "yes"
    assert verdict.answers["kind"].probs == pytest.approx({"finding": 0.7, "blocker": 0.15, "other": 0.15})
    assert tier.logprobs is False
    await Judge([tier]).ask("publish", [NEWS, KIND], STATE)
    assert len(model.requests) == 3
    assert model.requests[2][1] is not None and model.requests[2][1].json_output


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("I think it is news.", "no JSON object"),
        ('{"news": {"p": 0.9}}', "does not answer 'kind'"),
        ('{"news": {"p": "high"}, "kind": {"pick": "finding", "p": 0.7}}', "no probability"),
        ('{"news": {"p": 0.9}, "kind": {"pick": "bug", "p": 0.7}}', "not one of its options"),
    ],
)
def test_verbalized_replies_without_an_answer_are_invalid(text: str, message: str) -> None:
    with pytest.raises(TierFailure, match=message) as caught:
        parse_verbalized([NEWS, KIND], text)
    assert caught.value.kind == "invalid_response"


def test_json_nested_too_deeply_in_a_reply_is_no_answer() -> None:
    with pytest.raises(TierFailure, match="no JSON object"):
        parse_verbalized([NEWS], "{" * 10 + '"news": ' + "[" * 100_000)


def test_json_is_found_inside_prose() -> None:
    assert find_json_object('Answer: {"a": {"b": 1}} and {"c": 2}') == {"a": {"b": 1}}
    assert parse_verbalized([NEWS], '{"news": 0.25}')["news"] == RawAnswer(p=0.25, verbalized=True)


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ModelAPIError("denied", status=401), "error:auth"),
        (ModelAPIError("slow down", status=429), "error:rate_limited"),
        (ModelAPIError("down", status=502), "error:server"),
        (ModelAPIError("no route"), "error:unreachable"),
    ],
)
async def test_llm_provider_errors_map_to_failure_kinds(error: Exception, reason: str) -> None:
    verdict = await Judge([LlmTier(CannedModel(error))]).ask("publish", [NEWS], STATE)
    assert verdict.reason == reason


async def test_llm_reply_missing_a_code_is_invalid() -> None:
    model = CannedModel(logprob_reply({"Y": math.log(0.9)}, text="Y"))
    verdict = await Judge([LlmTier(model)]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.reason == "error:invalid_response"


# --------------------------------------------------------------------------- llm tier over the real providers


def openai_logprobs_handler(request: httpx.Request) -> httpx.Response:
    body = json.loads(request.content)
    assert body["logprobs"] is True and body["top_logprobs"] >= 5 and body["temperature"] == 0
    tokens = [
        ("Y", [("Y", math.log(0.9)), ("N", math.log(0.1))]),
        (" C", [(" C", math.log(0.85)), (" A", math.log(0.1)), (" B", math.log(0.05))]),
    ]
    content = [
        {"token": token, "logprob": alts[0][1], "top_logprobs": [{"token": t, "logprob": lp} for t, lp in alts]}
        for token, alts in tokens
    ]
    return httpx.Response(
        200,
        json={
            "model": "gpt-4.1-mini",
            "choices": [{"message": {"role": "assistant", "content": "Y C"}, "logprobs": {"content": content}}],
            "usage": {"prompt_tokens": 210, "completion_tokens": 3},
        },
    )


async def test_llm_tier_over_an_openai_compatible_endpoint_uses_logprobs() -> None:
    model = OpenAIChatModel("gpt-4.1-mini", api_key="k", transport=httpx.MockTransport(openai_logprobs_handler))
    verdict = await Judge([LlmTier(model, id="llm:openai:gpt-4.1-mini")]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.reason is None
    assert verdict.answers["news"].p == pytest.approx(0.9) and not verdict.answers["news"].verbalized
    assert verdict.answers["kind"].zone == "escape" and verdict.answers["kind"].p == pytest.approx(0.85)
    assert verdict.tokens == 213


async def test_llm_tier_over_anthropic_uses_verbalized_json() -> None:
    bodies: list[dict[str, object]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        text = 'Here you go: {"news": {"p": 0.1}, "kind": {"pick": "blocker", "p": 0.9}}'
        return httpx.Response(
            200, json={"content": [{"type": "text", "text": text}], "usage": {"input_tokens": 100, "output_tokens": 20}}
        )

    model = AnthropicModel("claude-x", api_key="k", transport=httpx.MockTransport(handler))
    verdict = await Judge([LlmTier(model)]).ask("publish", [NEWS, KIND], STATE)
    # The API has no logprobs: both questions go in one JSON request from the first call, none is wasted on codes.
    assert len(bodies) == 1 and "JSON object" in json.dumps(bodies[0]["messages"])
    assert verdict.answers["news"].zone == "no" and verdict.answers["news"].verbalized
    assert verdict.answers["kind"].pick == "blocker" and verdict.tokens == 120


@pytest.mark.parametrize("name", ["o4-mini", "gpt-5-mini"])
async def test_an_openai_reasoning_model_is_asked_in_json_with_room_to_think(name: str) -> None:
    """Its hidden reasoning counts against the output cap, and it gives no logprobs: a code request capped at a
    few tokens would come back empty on every item, and fail open for good."""
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        text = '{"news": {"p": 0.95}, "kind": {"pick": "finding", "p": 0.9}}'
        return httpx.Response(200, json={
            "model": name, "choices": [{"message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 400,
                      "completion_tokens_details": {"reasoning_tokens": 380}}})

    tier = LlmTier(OpenAIChatModel(name, api_key="k", transport=httpx.MockTransport(handler)))
    verdict = await Judge([tier]).ask("publish", [NEWS, KIND], STATE)
    assert verdict.reason is None and verdict.answers["kind"].pick == "finding" and verdict.tokens == 700
    assert len(bodies) == 1  # no wasted code request
    body = bodies[0]
    assert body["max_completion_tokens"] >= REASONING_ALLOWANCE and body["reasoning_effort"] == "low"
    assert "temperature" not in body and "logprobs" not in body and body["response_format"] == {"type": "json_object"}


async def test_a_chat_model_s_json_request_stays_small_and_says_nothing_of_reasoning() -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"role": "assistant", "content": '{"news": 0.9}'}}]})

    tier = LlmTier(OpenAIChatModel("gpt-4.1-mini", api_key="k", transport=httpx.MockTransport(handler)))
    tier.logprobs = False
    await Judge([tier]).ask("publish", [NEWS], STATE)
    assert bodies[0]["max_completion_tokens"] < 200 and "reasoning_effort" not in bodies[0]


async def test_llm_tier_auth_failure_from_the_provider() -> None:
    model = OpenAIChatModel(
        "gpt-4.1-mini",
        api_key="bad",
        transport=httpx.MockTransport(lambda request: httpx.Response(401, json={"error": "no"})),
    )
    verdict = await Judge([LlmTier(model)]).ask("publish", [NEWS], STATE)
    assert verdict.reason == "error:auth"


async def test_llm_tier_switches_to_json_when_logprobs_are_refused() -> None:
    json_reply = ModelResponse(text='{"news": {"p": 0.9}}')
    model = CannedModel(ModelAPIError("logprobs not supported", status=400), json_reply)
    tier = LlmTier(model)
    verdict = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert verdict.reason is None and verdict.answers["news"].verbalized and tier.logprobs is False
    later = LlmTier(CannedModel(ModelAPIError("bad", status=400)))
    later.logprobs = True
    assert (await Judge([later]).ask("publish", [NEWS], STATE)).reason == "error:bad_request"


async def test_the_race_gate_passes_over_local_to_an_llm_tier() -> None:
    """`local` has no head for `answers` and abstains without loading its model; the llm tier decides."""
    from hive.gates import Gates
    from hive.judge.local.tier import LocalTier
    from hive.records import Note

    model = CannedModel(logprob_reply({"Y": math.log(0.96), "N": math.log(0.04)}, text="Y"))
    local = LocalTier()
    gates = Gates(Judge([local, LlmTier(model)]), goal="why does the export drop rows")
    result = await gates.answer(Note(id="n-7", bee="bee-2", kind="finding", score=0.9,
                                     text="export.py:5 never yields the final partial batch"))
    assert result.answered and result.score == pytest.approx(0.96)
    row = result.decision
    assert row is not None and (row.outcome, row.source) == ("answered", "judge")
    assert [(call.tier, call.kept) for call in row.tiers] == [("local", []), ("llm:canned:judge", ["answers"])]
    assert "final partial batch" in model.requests[0][0][1].content
    assert not local.embedder.texts_embedded


def test_file_paths_in_tier_specs_are_made_absolute_for_a_resume_from_elsewhere(tmp_path: Path) -> None:
    assert resolve_tier_spec("script:rules/r.json", tmp_path) == f"script:{tmp_path / 'rules' / 'r.json'}"
    assert resolve_tier_spec("llm:script:s.json", tmp_path) == f"llm:script:{tmp_path / 's.json'}"
    for unchanged in ("local", "http:http://127.0.0.1:9/x", "llm:openai:gpt-4.1-mini"):
        assert resolve_tier_spec(unchanged, tmp_path) == unchanged


async def test_an_endpoint_refusing_every_request_is_not_taken_for_one_without_logprobs() -> None:
    """A 404 (a model not pulled yet, a wrong URL) refuses the plain request too: that is no sign the endpoint lacks
    logprobs, so once it answers, the tier still reads probabilities off logprobs rather than verbalized JSON."""
    missing = ModelAPIError("model 'qwen' not found", status=404)
    model = CannedModel(missing, missing, logprob_reply({"Y": math.log(0.9), "N": math.log(0.1)}, text="Y"))
    tier = LlmTier(model)
    down = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert down.reason == "error:bad_request" and tier.logprobs is None
    up = await Judge([tier]).ask("publish", [NEWS], STATE)
    assert up.reason is None and up.answers["news"].p == pytest.approx(0.9) and not up.answers["news"].verbalized
    assert tier.logprobs is True
