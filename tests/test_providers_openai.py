"""The OpenAI-compatible provider against a real local server speaking the chat-completions wire format."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from hive.providers.base import Message, ModelSettings, ProviderError, ToolCall, ToolSpec
from hive.providers.openai import build_request, parse_response, takes_temperature
from hive.providers.registry import infer_model
from hive.providers.retry import RetryPolicy
from hive.testing import LocalHTTPServer

KEY = "sk-test-abcdef0123456789"
FAST = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.005, timeout=5)
GREP = ToolSpec("grep", "Search the repository", {"type": "object", "properties": {"pattern": {"type": "string"}}})


def completion(
    text: str | None = "ok",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    usage: tuple[int, int] = (10, 5),
    logprobs: Any = None,
    model: str = "gpt-4.1-mini-2025-04-14",
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = logprobs
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [choice],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
    }


def wire_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


@pytest.fixture
def api() -> Iterator[LocalHTTPServer]:
    with LocalHTTPServer() as server:
        yield server


def openai_model(api: LocalHTTPServer, model: str = "gpt-4.1-mini", **env: str) -> Any:
    return infer_model(
        f"openai:{model}", env={"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"{api.url}/v1", **env}, retry=FAST
    )


async def test_text_reply_with_usage_and_cost(api: LocalHTTPServer) -> None:
    api.reply(completion("The bug is in board.py:42.", usage=(1000, 500)))
    model = openai_model(api)
    try:
        reply = await model.request(
            [Message("system", "You investigate."), Message("user", "Where is the bug?")],
            settings=ModelSettings(max_tokens=256, temperature=0.2),
        )
    finally:
        await model.aclose()
    assert reply.text == "The bug is in board.py:42."
    assert reply.tool_calls == ()
    assert reply.model == "gpt-4.1-mini-2025-04-14"
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (1000, 500)
    assert reply.usage.cost_usd is not None
    assert math.isclose(reply.usage.cost_usd, 1000 * 0.40e-6 + 500 * 1.60e-6)
    (request,) = api.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.json() == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "You investigate."},
            {"role": "user", "content": "Where is the bug?"},
        ],
        "max_completion_tokens": 256,
        "temperature": 0.2,
    }


async def test_unknown_model_has_no_cost(api: LocalHTTPServer) -> None:
    api.reply(completion("hi", model="my-finetune"))
    model = openai_model(api, model="my-finetune")
    reply = await model.request([Message("user", "hi")])
    await model.aclose()
    assert reply.usage.total == 15
    assert reply.usage.cost_usd is None


async def test_tool_calls_both_ways(api: LocalHTTPServer) -> None:
    api.reply(
        completion(
            None,
            tool_calls=[
                wire_call("call_a", "grep", '{"pattern": "fold("}'),
                wire_call("call_b", "read", '{"path": "hive/board.py", "limit": 40}'),
            ],
        )
    )
    api.reply(completion("FOUND: fold drops notes, hive/board.py:88"))
    model = openai_model(api)
    conversation = [Message("user", "Investigate the board.")]
    first = await model.request(conversation, tools=[GREP])
    assert first.text == ""
    assert first.tool_calls == (
        ToolCall("call_a", "grep", {"pattern": "fold("}),
        ToolCall("call_b", "read", {"path": "hive/board.py", "limit": 40}),
    )
    conversation += [
        Message("assistant", first.text, tool_calls=first.tool_calls),
        Message("tool", "hive/board.py:88: def fold(", tool_call_id="call_a", name="grep"),
        Message("tool", "...", tool_call_id="call_b", name="read"),
    ]
    second = await model.request(conversation, tools=[GREP])
    await model.aclose()
    assert second.text.startswith("FOUND:")
    sent = api.requests[1].json()
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "grep", "description": GREP.description, "parameters": GREP.parameters},
        }
    ]
    assert sent["messages"][1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            wire_call("call_a", "grep", '{"pattern": "fold("}'),
            wire_call("call_b", "read", '{"path": "hive/board.py", "limit": 40}'),
        ],
    }
    assert sent["messages"][2] == {
        "role": "tool",
        "tool_call_id": "call_a",
        "content": "hive/board.py:88: def fold(",
    }


async def test_malformed_tool_arguments_become_a_tool_error_not_a_crash(api: LocalHTTPServer) -> None:
    broken = '{"pattern": "fold(", '
    api.reply(
        completion(
            None,
            tool_calls=[
                wire_call("call_1", "grep", broken),
                wire_call("call_2", "grep", '["not", "an", "object"]'),
                wire_call("call_3", "ls", ""),
            ],
        )
    )
    api.reply(completion("retrying"))
    model = openai_model(api)
    reply = await model.request([Message("user", "go")], tools=[GREP])
    bad, not_object, empty = reply.tool_calls
    assert bad.error is not None and bad.error.startswith("invalid JSON arguments: ")
    assert (bad.raw, bad.arguments, bad.name) == (broken, {}, "grep")
    assert not_object.error == "invalid JSON arguments: not a JSON object"
    assert empty == ToolCall("call_3", "ls", {})
    # The call goes back with {} (what the model wrote is quoted in the tool result by the bee): vLLM,
    # llama.cpp and SGLang parse the history's arguments and would refuse every later request.
    await model.request(
        [
            Message("user", "go"),
            Message("assistant", "", tool_calls=(bad,)),
            Message("tool", f"error: {bad.error}", tool_call_id="call_1", name="grep"),
        ]
    )
    await model.aclose()
    assert api.requests[1].json()["messages"][1]["tool_calls"][0]["function"]["arguments"] == "{}"


async def test_tool_calls_with_a_name_or_id_of_the_wrong_type_are_tool_errors(api: LocalHTTPServer) -> None:
    api.reply(
        completion(
            None,
            tool_calls=[
                {"id": "call_1", "type": "function", "function": {"name": ["grep"], "arguments": "{}"}},
                {"id": 7, "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "x"}'}},
                {"id": None, "type": "function", "function": {"name": {"n": 1}, "arguments": "{}"}},
            ],
        )
    )
    model = openai_model(api)
    reply = await model.request([Message("user", "go")], tools=[GREP])
    await model.aclose()
    listed, numbered, nameless = reply.tool_calls
    assert listed.error == nameless.error == "malformed tool call: the tool name is not a string"
    assert (listed.id, listed.name, nameless.id, nameless.name) == ("call_1", "", "call-2", "")
    assert numbered == ToolCall("7", "grep", {"pattern": "x"})


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": -5, "completion_tokens": 3},
        {"prompt_tokens": 10**30, "completion_tokens": 12},
        {"prompt_tokens": 1e400, "completion_tokens": 1},
        {"prompt_tokens": 1, "completion_tokens": True},
    ],
)
async def test_usage_that_is_not_a_count_is_an_invalid_response_not_a_crash(
    api: LocalHTTPServer, usage: dict[str, Any]
) -> None:
    payload = completion("fine")
    payload["usage"] = usage
    api.reply(json.dumps(payload).replace("Infinity", "1e400"))
    model = openai_model(api)
    with pytest.raises(ProviderError) as caught:
        await model.request([Message("user", "go")])
    await model.aclose()
    assert caught.value.kind == "invalid_response"
    assert "token count" in str(caught.value)


async def test_usage_counts_sent_as_text_or_whole_floats_are_counted(api: LocalHTTPServer) -> None:
    payload = completion("fine")
    payload["usage"] = {"prompt_tokens": "12", "completion_tokens": 7.0}
    api.reply(payload)
    model = openai_model(api)
    reply = await model.request([Message("user", "go")])
    await model.aclose()
    assert (reply.usage.input_tokens, reply.usage.output_tokens) == (12, 7)


async def test_content_given_as_a_list_of_parts_is_the_text(api: LocalHTTPServer) -> None:
    payload = completion(None)
    payload["choices"][0]["message"]["content"] = [
        {"type": "text", "text": "FOUND: the batch "},
        {"type": "image_url", "image_url": {"url": "x"}},
        {"type": "text", "text": "is never flushed."},
    ]
    api.reply(payload)
    model = openai_model(api)
    reply = await model.request([Message("user", "go")])
    await model.aclose()
    assert reply.text == "FOUND: the batch is never flushed."


async def test_lone_surrogates_in_a_reply_become_replacement_characters(api: LocalHTTPServer) -> None:
    # Python's JSON parser keeps "\\udcff" as a lone surrogate, which no UTF-8 file can hold: the coordinator's
    # answer.md, a transcript, a judge's ledger. Every reply is made valid text where it is parsed.
    calls = [wire_call("c1", "grep", '{"pattern": "\\ud800"}')]
    api.reply(json.dumps(completion("The answer is in \udcff.txt", tool_calls=calls)))
    model = openai_model(api)
    reply = await model.request([Message("user", "go")], tools=[GREP])
    await model.aclose()
    assert reply.text == "The answer is in \ufffd.txt"
    assert reply.tool_calls[0].arguments == {"pattern": "\ufffd"}


async def test_top_logprobs_are_asked_for_and_parsed(api: LocalHTTPServer) -> None:
    logprobs = {
        "content": [
            {
                "token": "yes",
                "logprob": -0.1,
                "top_logprobs": [{"token": "yes", "logprob": -0.1}, {"token": "no", "logprob": -2.4}],
            }
        ]
    }
    api.reply(completion("yes", logprobs=logprobs))
    model = openai_model(api)
    reply = await model.request([Message("user", "Is it news?")], settings=ModelSettings(max_tokens=1, top_logprobs=2))
    await model.aclose()
    assert reply.top_logprobs == ({"yes": -0.1, "no": -2.4},)
    body = api.requests[0].json()
    assert (body["logprobs"], body["top_logprobs"]) == (True, 2)


async def test_no_logprobs_when_not_given(api: LocalHTTPServer) -> None:
    api.reply(completion("yes"))
    model = openai_model(api)
    reply = await model.request([Message("user", "q")], settings=ModelSettings(top_logprobs=2))
    await model.aclose()
    assert reply.top_logprobs is None


async def test_json_output_asks_for_a_json_object(api: LocalHTTPServer) -> None:
    api.reply(completion('{"news": 0.9}'))
    model = openai_model(api)
    reply = await model.request([Message("user", "answer in JSON")], settings=ModelSettings(json_output=True))
    await model.aclose()
    assert json.loads(reply.text) == {"news": 0.9}
    assert api.requests[0].json()["response_format"] == {"type": "json_object"}


async def test_rate_limit_then_success_through_the_model(api: LocalHTTPServer) -> None:
    api.reply({"error": {"message": "Rate limit reached"}}, status=429, headers={"retry-after-ms": "10"})
    api.reply({"error": {"message": "oops"}}, status=500)
    api.reply(completion("finally"))
    model = openai_model(api)
    reply = await model.request([Message("user", "q")])
    await model.aclose()
    assert reply.text == "finally"
    assert len(api.requests) == 3


async def test_per_call_timeout_overrides_the_policy(api: LocalHTTPServer) -> None:
    api.reply(completion("late"), delay=2)
    api.reply(completion("on time"))
    model = openai_model(api)
    reply = await model.request([Message("user", "q")], settings=ModelSettings(timeout=0.2))
    await model.aclose()
    assert reply.text == "on time"


async def test_auth_error_names_no_key(api: LocalHTTPServer) -> None:
    masked = "sk-test-********************6789"
    api.reply({"error": {"message": f"Incorrect API key provided: {masked}. Also {KEY}."}}, status=401)
    model = openai_model(api)
    with pytest.raises(ProviderError) as caught:
        await model.request([Message("user", "q")])
    await model.aclose()
    error = caught.value
    assert error.kind == "auth"
    assert error.status == 401
    assert str(error).startswith("openai:gpt-4.1-mini: HTTP 401 (authentication failed): Incorrect API key")
    for text in (str(error), error.body or "", repr(error), repr(model)):
        assert KEY not in text
        assert masked not in text
    assert len(api.requests) == 1


@pytest.mark.parametrize(
    "body",
    [
        "<html>gateway</html>",
        {"choices": []},
        {"choices": [{"message": "x"}]},
        {"choices": [{"message": {}}], "usage": {"prompt_tokens": [1]}},
    ],
)
async def test_a_response_that_is_not_a_completion_is_invalid_response(api: LocalHTTPServer, body: Any) -> None:
    api.reply(body)
    model = openai_model(api)
    with pytest.raises(ProviderError) as caught:
        await model.request([Message("user", "q")])
    await model.aclose()
    assert caught.value.kind == "invalid_response"
    assert str(caught.value).startswith("openai:gpt-4.1-mini: unexpected response: ")
    assert len(api.requests) == 1


async def test_ollama_speaks_the_same_api_without_a_key(api: LocalHTTPServer) -> None:
    api.reply(completion("local answer", model="qwen2.5-coder:7b", usage=(100, 20)))
    model = infer_model("ollama:qwen2.5-coder:7b", env={"OLLAMA_HOST": api.url}, retry=FAST)
    reply = await model.request([Message("user", "q")], settings=ModelSettings(max_tokens=64))
    await model.aclose()
    assert model.name == "ollama:qwen2.5-coder:7b"
    assert reply.usage.cost_usd == 0.0
    (request,) = api.requests
    assert request.path == "/v1/chat/completions"
    assert "authorization" not in request.headers
    assert request.json()["model"] == "qwen2.5-coder:7b"
    assert request.json()["max_tokens"] == 64


async def test_openai_compat_uses_hive_base_url_and_its_own_key(api: LocalHTTPServer) -> None:
    api.reply(completion("compat"))
    env = {"HIVE_BASE_URL": f"{api.url}/api/v1", "HIVE_API_KEY": "or-key-123456", "OPENAI_API_KEY": KEY}
    model = infer_model("openai-compat:meta-llama/llama-3.3-70b", env=env, retry=FAST)
    reply = await model.request([Message("user", "q")])
    await model.aclose()
    assert reply.text == "compat"
    (request,) = api.requests
    assert request.path == "/api/v1/chat/completions"
    # The OpenAI key is never sent to a third-party server.
    assert request.headers["authorization"] == "Bearer or-key-123456"
    assert request.json()["model"] == "meta-llama/llama-3.3-70b"


async def test_transport_is_used_when_given() -> None:
    import httpx

    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=completion("via transport"))

    model = infer_model("openai:gpt-4.1", env={"OPENAI_API_KEY": KEY}, transport=httpx.MockTransport(handler))
    reply = await model.request([Message("user", "q")])
    await model.aclose()
    assert reply.text == "via transport"
    assert str(seen[0].url) == "https://api.openai.com/v1/chat/completions"


def test_build_request_and_parse_response_are_pure() -> None:
    body = build_request("m", [Message("user", "hi")], None, ModelSettings())
    assert body == {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    reply = parse_response(completion("x", usage=(3, 4)), provider="openai-compat", model="m")
    assert (reply.text, reply.usage.total, reply.usage.cost_usd) == ("x", 7, None)
    with pytest.raises(ValueError):
        parse_response([], provider="openai", model="m")


@pytest.mark.parametrize("name", ["o3", "o4-mini", "gpt-5", "gpt-5-mini-2025-08-07", "o1"])
async def test_openai_reasoning_models_get_no_temperature(api: LocalHTTPServer, name: str) -> None:
    """They answer 400 to any temperature but the default: angle planning and the answer (asked at 0.2)
    would fail on every run with `--model openai:gpt-5-mini`."""
    api.reply(completion("ok", model=name))
    model = openai_model(api, model=name)
    await model.request([Message("user", "hi")], settings=ModelSettings(max_tokens=64, temperature=0.2))
    await model.aclose()
    assert api.requests[0].json() == {
        "model": name, "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 64,
    }


@pytest.mark.parametrize("spec", ["openai:gpt-5-chat-latest", "openai:gpt-4.1", "openai-compat:o3"])
def test_other_models_keep_their_temperature(spec: str) -> None:
    provider, _, name = spec.partition(":")
    assert takes_temperature(provider, name)
    body = build_request(name, [Message("user", "hi")], None, ModelSettings(temperature=0.2),
                         temperature=takes_temperature(provider, name))
    assert body["temperature"] == 0.2


def test_closed_tools_are_tool_choice_none_for_openai_only() -> None:
    settings = ModelSettings(tools_closed=True)
    assert build_request("gpt-4.1", [Message("user", "hi")], [GREP], settings, tool_choice_none=True)[
        "tool_choice"] == "none"
    # Not every compatible server knows "none"; an error there would cost the bee its report.
    assert "tool_choice" not in build_request("qwen", [Message("user", "hi")], [GREP], settings)
    assert "tool_choice" not in build_request("gpt-4.1", [Message("user", "hi")], [GREP], ModelSettings(),
                                              tool_choice_none=True)


async def test_the_openai_model_sends_tool_choice_none_when_the_tools_are_closed(api: LocalHTTPServer) -> None:
    api.reply(completion("## Found\n- x"))
    model = openai_model(api)
    await model.request([Message("user", "hi")], tools=[GREP], settings=ModelSettings(tools_closed=True))
    await model.aclose()
    assert api.requests[0].json()["tool_choice"] == "none"
