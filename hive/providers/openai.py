"""OpenAI-compatible chat completions: OpenAI itself, Ollama, and any server that speaks the same API.

Request building (:func:`build_request`) and response parsing (:func:`parse_response`) are pure functions;
:class:`OpenAIChatModel` only adds the HTTP client and the retry policy.
"""

from __future__ import annotations

import json
import re
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

OPENAI_BASE_URL = "https://api.openai.com/v1"
OLLAMA_BASE_URL = "http://localhost:11434/v1"


_OPENAI_REASONING_MODEL = re.compile(r"^(?:o\d|gpt-5(?!-chat))")
"""OpenAI's reasoning models (o1, o3, o4-mini, gpt-5, gpt-5-mini …; not gpt-5-chat)."""


def is_reasoning_model(provider: str, model: str) -> bool:
    """One of OpenAI's reasoning models: they think in hidden tokens that count against the output cap, give
    no token log probabilities, and refuse any temperature but the default."""
    return provider == "openai" and _OPENAI_REASONING_MODEL.match(model) is not None


def takes_temperature(provider: str, model: str) -> bool:
    """Whether a request may set ``temperature``: OpenAI's reasoning models refuse any value but the default
    with HTTP 400, which would fail angle planning and the answer, both asked at a low temperature."""
    return not is_reasoning_model(provider, model)


def build_request(
    model: str,
    messages: list[Message],
    tools: list[ToolSpec] | None,
    settings: ModelSettings,
    *,
    max_tokens_field: str = "max_tokens",
    temperature: bool = True,
    tool_choice_none: bool = False,
) -> dict[str, Any]:
    """The JSON body of a ``POST /chat/completions`` call.

    ``max_tokens_field`` is ``max_completion_tokens`` for OpenAI itself (its reasoning models refuse
    ``max_tokens``) and ``max_tokens`` for other servers, which mostly know only that. ``temperature=False``
    leaves the settings' temperature out (see :func:`takes_temperature`). ``tool_choice_none`` lets
    ``settings.tools_closed`` become ``tool_choice: "none"`` (OpenAI itself; not every compatible server knows it).
    """
    body: dict[str, Any] = {"model": model, "messages": [_wire_message(m) for m in messages]}
    if tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in tools
        ]
        if settings.tools_closed and tool_choice_none:
            body["tool_choice"] = "none"
    if settings.max_tokens is not None:
        body[max_tokens_field] = settings.max_tokens
    if settings.temperature is not None and temperature:
        body["temperature"] = settings.temperature
    if settings.top_logprobs is not None:
        body["logprobs"] = True
        body["top_logprobs"] = settings.top_logprobs
    if settings.json_output:
        body["response_format"] = {"type": "json_object"}
    if settings.reasoning_effort is not None:
        body["reasoning_effort"] = settings.reasoning_effort
    return body


def _wire_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.content or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    # Always a JSON object, even for a call whose arguments were not one (they are {} then):
                    # vLLM, llama.cpp and SGLang parse the history's arguments and answer 400 to every later
                    # request otherwise. The tool result quotes what the model wrote (prompts.bad_arguments).
                    "function": {"name": call.name, "arguments": json.dumps(call.arguments)},
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.content}


def parse_tool_call(index: int, wire: Any) -> ToolCall:
    """One entry of ``message.tool_calls``. Arguments that are not a JSON object give ``ToolCall.error``."""
    function = wire.get("function") if isinstance(wire, dict) else None
    if not isinstance(function, dict):
        return ToolCall(
            id=f"call-{index}", name="", arguments={}, error="malformed tool call", raw=json.dumps(wire)
        )
    call_id = tool_call_id(wire.get("id"), index)
    name = function.get("name") or ""
    if not isinstance(name, str):
        return ToolCall(
            id=call_id, name="", arguments={}, error="malformed tool call: the tool name is not a string",
            raw=json.dumps(wire),
        )
    raw = function.get("arguments")
    if isinstance(raw, dict):  # some compatible servers send the object itself
        return ToolCall(id=call_id, name=name, arguments=raw)
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return ToolCall(id=call_id, name=name, arguments={})
    if not isinstance(raw, str):
        raw = json.dumps(raw)
    try:
        arguments = valid_text(json.loads(raw))
    except ValueError as exc:
        return ToolCall(id=call_id, name=name, arguments={}, error=f"invalid JSON arguments: {exc}", raw=raw)
    if not isinstance(arguments, dict):
        return ToolCall(
            id=call_id, name=name, arguments={}, error="invalid JSON arguments: not a JSON object", raw=raw
        )
    return ToolCall(id=call_id, name=name, arguments=arguments)


def parse_response(payload: Any, *, provider: str, model: str) -> ModelResponse:
    """A ``chat.completion`` object → :class:`ModelResponse`. Raises ``ValueError`` when it is not one."""
    if not isinstance(payload, dict):
        raise ValueError("response is not a JSON object")
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("response has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("choice has no message")
    text = _content_text(message.get("content"))
    wire_calls = message.get("tool_calls") or []
    if not isinstance(wire_calls, list):
        raise ValueError("tool_calls is not a list")
    tool_calls = tuple(parse_tool_call(i, wire) for i, wire in enumerate(wire_calls))
    answered = payload.get("model")
    answered_model = answered if isinstance(answered, str) else model
    usage = _parse_usage(payload.get("usage"), provider=provider, model=model)
    return ModelResponse(
        text=text,
        tool_calls=tool_calls,
        usage=usage,
        model=answered_model,
        top_logprobs=_parse_top_logprobs(choice.get("logprobs")),
    )


def _content_text(content: Any) -> str:
    """A message's text: a string, or (as some compatible servers send it) a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"] for part in content if isinstance(part, dict) and isinstance(part.get("text"), str)
            and part.get("type", "text") in ("text", "output_text")
        )
    return ""


def _parse_usage(wire: Any, *, provider: str, model: str) -> TokenUsage:
    if not isinstance(wire, dict):
        return TokenUsage()
    input_tokens = token_count(wire.get("prompt_tokens"))
    output_tokens = token_count(wire.get("completion_tokens"))
    return TokenUsage(input_tokens, output_tokens, cost_usd(provider, model, input_tokens, output_tokens))


def _parse_top_logprobs(wire: Any) -> tuple[dict[str, float], ...] | None:
    if not isinstance(wire, dict) or not isinstance(wire.get("content"), list):
        return None
    tokens: list[dict[str, float]] = []
    for entry in wire["content"]:
        alternatives = entry.get("top_logprobs") if isinstance(entry, dict) else None
        if not isinstance(alternatives, list):
            raise ValueError("logprobs entry has no top_logprobs list")
        tokens.append(
            {
                alt["token"]: float(alt["logprob"])
                for alt in alternatives
                if isinstance(alt, dict)
                and isinstance(alt.get("token"), str)
                and isinstance(alt.get("logprob"), int | float)
            }
        )
    return tuple(tokens)


class OpenAIChatModel:
    """A model behind an OpenAI-compatible ``/chat/completions`` endpoint.

    ``provider`` names the price table to use (``openai``, ``ollama``, ``openai-compat``) and decides the
    max-tokens field. The HTTP client is made on first use, so building a model does no I/O.
    """

    def __init__(
        self,
        model: str,
        *,
        provider: str = "openai",
        base_url: str = OPENAI_BASE_URL,
        api_key: str | None = None,
        retry: RetryPolicy | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.name = f"{provider}:{model}"
        self.model = model
        self.provider = provider
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self._api_key = api_key
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.name!r}, base_url={self.base_url!r})"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            import httpx

            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            self._client = httpx.AsyncClient(
                base_url=self.base_url, headers=headers, transport=self._transport, timeout=self.retry.timeout
            )
        return self._client

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """One chat completion, retried under :attr:`retry`."""
        settings = settings or ModelSettings()
        field = "max_completion_tokens" if self.provider == "openai" else "max_tokens"
        body = build_request(self.model, messages, tools, settings, max_tokens_field=field,
                             temperature=takes_temperature(self.provider, self.model),
                             tool_choice_none=self.provider == "openai")
        client = self._http()
        response = await send_with_retry(
            lambda: client.send(client.build_request("POST", "/chat/completions", json=body), stream=True),
            policy=self.retry,
            label=self.name,
            timeout=settings.timeout,
            secrets=(self._api_key,) if self._api_key else (),
        )
        try:
            return parse_response(valid_text(response.json()), provider=self.provider, model=self.model)
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError is a ValueError too
            secrets = (self._api_key,) if self._api_key else ()
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
