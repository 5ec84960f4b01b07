"""Anthropic's Messages API.

hive's messages map onto it like this: system messages become the top-level ``system`` string; an assistant
message's tool calls become ``tool_use`` blocks; ``role="tool"`` results become ``tool_result`` blocks in a
user message; consecutive messages of one role are merged, since the API wants the roles to alternate.
The API gives no token log probabilities (``top_logprobs`` stays ``None``) and has no JSON mode:
``json_output`` adds an instruction to the system prompt instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hive.providers.base import (
    Message,
    ModelResponse,
    ModelSettings,
    ProviderError,
    TokenUsage,
    ToolCall,
    ToolSpec,
    token_count,
    tool_call_id,
    valid_text,
)
from hive.providers.prices import cost_usd
from hive.providers.retry import RetryPolicy, scrub, send_with_retry

if TYPE_CHECKING:
    import httpx

ANTHROPIC_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
"""The API requires ``max_tokens``; this is used when the settings give none."""
JSON_INSTRUCTION = "Reply with one JSON object and nothing else."


def build_request(
    model: str, messages: list[Message], tools: list[ToolSpec] | None, settings: ModelSettings
) -> dict[str, Any]:
    """The JSON body of a ``POST /v1/messages`` call."""
    system = [m.content for m in messages if m.role == "system" and m.content]
    if settings.json_output:
        system.append(JSON_INSTRUCTION)
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    for turn in turns:
        # tool_result blocks must open a user turn; notes injected after tool results come after them.
        turn["content"].sort(key=lambda block: block["type"] != "tool_result")
        if not turn["content"]:
            turn["content"] = [{"type": "text", "text": "(empty)"}]
    body: dict[str, Any] = {
        "model": model,
        "max_tokens": settings.max_tokens if settings.max_tokens is not None else DEFAULT_MAX_TOKENS,
        "messages": turns,
    }
    if system:
        body["system"] = "\n\n".join(system)
    if tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
        ]
        if settings.tools_closed:
            body["tool_choice"] = {"type": "none"}
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    return body


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [
            {"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}
        ]
    blocks: list[dict[str, Any]] = [{"type": "text", "text": message.content}] if message.content else []
    if message.role == "assistant":
        blocks.extend(
            {"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments}
            for call in message.tool_calls
        )
    return blocks


def parse_response(payload: Any, *, model: str) -> ModelResponse:
    """A ``message`` object → :class:`ModelResponse`. Raises ``ValueError`` when it is not one."""
    if not isinstance(payload, dict) or not isinstance(payload.get("content"), list):
        raise ValueError("response has no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for index, block in enumerate(payload["content"]):
        if not isinstance(block, dict):
            raise ValueError("content block is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            call_id = tool_call_id(block.get("id"), index)
            name = block.get("name") or ""
            arguments = block.get("input")
            if not isinstance(name, str):
                calls.append(
                    ToolCall(
                        id=call_id,
                        name="",
                        arguments={},
                        error="malformed tool call: the tool name is not a string",
                        raw=repr(block),
                    )
                )
            elif isinstance(arguments, dict):
                calls.append(ToolCall(id=call_id, name=name, arguments=arguments))
            else:
                calls.append(
                    ToolCall(
                        id=call_id,
                        name=name,
                        arguments={},
                        error="invalid JSON arguments: not a JSON object",
                        raw=repr(arguments),
                    )
                )
    wire_usage = payload.get("usage")
    usage: dict[str, Any] = wire_usage if isinstance(wire_usage, dict) else {}
    # Cached prompt tokens are counted (and priced) as plain input: hive does not ask for prompt caching.
    input_tokens = 0
    for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        input_tokens += token_count(usage.get(name))
    output_tokens = token_count(usage.get("output_tokens"))
    return ModelResponse(
        text="\n\n".join(t for t in texts if t),
        tool_calls=tuple(calls),
        usage=TokenUsage(
            input_tokens, output_tokens, cost_usd("anthropic", model, input_tokens, output_tokens)
        ),
        model=payload["model"] if isinstance(payload.get("model"), str) else model,
    )


class AnthropicModel:
    """A Claude model over the Messages API. The HTTP client is made on first use."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str = ANTHROPIC_BASE_URL,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = f"anthropic:{model}"
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"AnthropicModel({self.name!r}, base_url={self.base_url!r})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                base_url=self.base_url,
                headers={"x-api-key": self._api_key, "anthropic-version": API_VERSION},
                transport=self._transport,
                timeout=self.retry.timeout,
            )
        return self._client

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """One Messages API call, retried under :attr:`retry`."""
        settings = settings or ModelSettings()
        body = build_request(self.model, messages, tools, settings)
        client = self._http()
        secrets = (self._api_key,)
        response = await send_with_retry(
            lambda: client.send(client.build_request("POST", "/v1/messages", json=body), stream=True),
            policy=self.retry,
            label=self.name,
            timeout=settings.timeout,
            secrets=secrets,
        )
        try:
            return parse_response(valid_text(response.json()), model=self.model)
        except (ValueError, TypeError) as exc:
            raise ProviderError(
                scrub(f"{self.name}: unexpected response: {exc}", secrets),
                kind="invalid_response",
                status=response.status_code,
                body=scrub(response.text[:2000], secrets),
            ) from None

    async def aclose(self) -> None:
        """Close the HTTP client, if one was made."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None
