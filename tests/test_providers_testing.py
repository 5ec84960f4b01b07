"""The test doubles in hive.testing implement the Model protocol for real."""

from __future__ import annotations

import subprocess
import sys

import httpx
import pytest

from hive.providers.base import Message, Model, ModelResponse, ModelSettings, TokenUsage, ToolCall, ToolSpec
from hive.testing import FunctionModel, LocalHTTPServer, ScriptedModel, UnexpectedModelCall

TOOL = ToolSpec("ls", "List a directory", {"type": "object"})


async def test_function_model_with_a_sync_function() -> None:
    seen: list[tuple[list[Message], list[ToolSpec], ModelSettings]] = []

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> str:
        seen.append((messages, tools, settings))
        return f"{len(messages)} message(s), last: {messages[-1].content}"

    model = FunctionModel(reply)
    assert isinstance(model, Model)
    response = await model.request([Message("user", "hello")])
    assert response == ModelResponse(text="1 message(s), last: hello", model="function")
    assert seen == [([Message("user", "hello")], [], ModelSettings())]
    await model.request([Message("user", "again")], [TOOL], ModelSettings(max_tokens=5))
    assert seen[1][1:] == ([TOOL], ModelSettings(max_tokens=5))


async def test_function_model_with_an_async_function_returning_a_response() -> None:
    async def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> ModelResponse:
        return ModelResponse(tool_calls=(ToolCall("c1", "ls", {"path": "."}),), usage=TokenUsage(3, 2))

    response = await FunctionModel(reply, name="fn").request([Message("user", "x")], [TOOL])
    assert response.tool_calls == (ToolCall("c1", "ls", {"path": "."}),)
    assert response.usage.total == 5


async def test_scripted_model_replies_in_order_and_records_calls() -> None:
    canned = ModelResponse(text="second", usage=TokenUsage(1, 1))
    model = ScriptedModel(["first", canned, ValueError("backend exploded")])
    assert isinstance(model, Model)
    assert (await model.request([Message("user", "a")])).text == "first"
    assert await model.request([Message("user", "b")], [TOOL]) is canned
    assert model.remaining == 1
    with pytest.raises(AssertionError, match="1 response"):
        model.assert_complete()
    with pytest.raises(ValueError, match="backend exploded"):
        await model.request([])
    model.assert_complete()
    assert [call.messages[0].content for call in model.calls[:2]] == ["a", "b"]
    assert model.calls[1].tools == [TOOL]
    assert model.calls[0].settings == ModelSettings()
    with pytest.raises(UnexpectedModelCall, match="call 4 but no responses left"):
        await model.request([])


async def test_local_http_server_plays_its_queue_and_records_requests() -> None:
    with LocalHTTPServer() as server:
        server.reply({"a": 1}, headers={"x-extra": "yes"})
        server.reply("plain text", status=418)
        async with httpx.AsyncClient(base_url=server.url) as client:
            first = await client.post("/one", json={"q": 1}, headers={"X-Key": "v"})
            second = await client.get("/two")
            third = await client.post("/three")
    assert (first.status_code, first.json(), first.headers["x-extra"]) == (200, {"a": 1}, "yes")
    assert (second.status_code, second.text) == (418, "plain text")
    assert third.status_code == 500
    assert [(r.method, r.path) for r in server.requests] == [("POST", "/one"), ("GET", "/two"), ("POST", "/three")]
    assert server.requests[0].json() == {"q": 1}
    assert server.requests[0].headers["x-key"] == "v"


def test_hive_testing_imports_no_http_stack() -> None:
    code = "import sys, hive.testing; print([m for m in ('httpx', 'http.server') if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
