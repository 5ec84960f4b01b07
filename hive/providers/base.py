"""The provider protocol: messages and tool specs in, one reply out.

Everything that talks to a model (bees, angle planning, the answer synthesis, the ``llm:`` judge tier)
goes through :class:`Model`. Real providers speak HTTP with httpx; test doubles live in
:mod:`hive.testing` and implement the same protocol.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from hive.errors import ModelAPIError


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: dict[str, Any]
    error: str | None = None
    """Set when the model's arguments were not valid JSON; the raw text is kept in ``raw``."""
    raw: str | None = None


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    """For ``role="tool"``: the call this message answers."""
    name: str | None = None
    """For ``role="tool"``: the tool's name."""


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    """JSON Schema of the arguments object."""


def add_cost(a: float | None, b: float | None) -> float | None:
    """The sum of two costs, where ``None`` is "no known price": unknown only when both are."""
    return None if a is None and b is None else (a or 0.0) + (b or 0.0)


@dataclass(frozen=True)
class TokenUsage:
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None

    def __add__(self, other: TokenUsage) -> TokenUsage:
        return TokenUsage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            add_cost(self.cost_usd, other.cost_usd),
        )

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelSettings:
    max_tokens: int | None = None
    temperature: float | None = None
    timeout: float | None = None
    """Hard per-request timeout in seconds."""
    top_logprobs: int | None = None
    """Ask for the top-k log probabilities of each output token (OpenAI-compatible endpoints)."""
    json_output: bool = False
    tools_closed: bool = False
    """The tools are still described (a conversation with tool calls needs them) but must not be called: the
    bee's time is up and its report is due. OpenAI and Anthropic are told so with ``tool_choice: none``."""
    reasoning_effort: Literal["low", "medium", "high"] | None = None
    """How much a reasoning model may think before it answers (OpenAI-compatible endpoints; sent only when set)."""


@dataclass(frozen=True)
class ModelResponse:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: TokenUsage = field(default_factory=TokenUsage)
    model: str = ""
    top_logprobs: tuple[dict[str, float], ...] | None = None
    """Per output token, the most likely tokens and their log probabilities, when asked for and given."""


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(value: Any) -> Any:
    """``value`` with every lone surrogate in its strings (JSON's ``"\\udcff"``, which Python's parser keeps)
    replaced by U+FFFD: such a string is not UTF-8, so no file or record could hold it. Lists, tuples (as
    lists) and dicts are cleaned throughout; anything else is returned as it is."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {valid_text(key): valid_text(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [valid_text(item) for item in value]
    return value


MAX_TOKEN_COUNT = 1 << 40
"""More tokens than any call can use: a usage figure above it is garbage from the server, not a count."""


def token_count(value: Any) -> int:
    """A usage figure from a provider's response as a count of tokens (0 when it is missing).

    Raises ``ValueError`` (the parsers' signal for an invalid response) for anything that is not a count:
    a list, a boolean, a negative or absurdly large number, infinity or NaN (JSON's ``1e400``).
    """
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"token count {value!r:.40} is not a number")
    count = float(value)
    if not 0 <= count <= MAX_TOKEN_COUNT:
        raise ValueError(f"token count {value!r:.40} is out of range")
    return int(count)


def tool_call_id(value: Any, index: int) -> str:
    """A tool call's id from the wire: a string as sent, a number as its text, else one made from its index."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return f"call-{index}"


@runtime_checkable
class Model(Protocol):
    """A chat model that may call tools. Implementations must be safe to call from one task at a time."""

    name: str
    """The spec it was made from, e.g. ``openai:gpt-4.1-mini``."""

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse: ...

    async def aclose(self) -> None: ...


class Metered:
    """A :class:`Model` that adds up the usage of the replies it passes on: the coordinator's own calls
    (planning the angles, writing the answer), which no bee reports."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.name = model.name
        self.calls = 0
        self.usage = TokenUsage()

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        reply = await self.model.request(messages, tools, settings)
        self.calls += 1
        self.usage += reply.usage
        return reply

    async def aclose(self) -> None:
        await self.model.aclose()


ErrorKind = Literal[
    "timeout", "unreachable", "auth", "rate_limited", "server", "bad_request", "invalid_response"
]
"""Why a provider call failed: the judge's ``TierFailure`` kinds, so that a tier can pass them on."""


class ProviderError(ModelAPIError):
    """A provider call that failed for good: retries exhausted, or an error that retrying cannot fix.

    ``kind`` says why; ``status`` is the last HTTP status (``None`` when no response came back) and ``body``
    the start of the last response body. Neither the message nor the body ever contains an API key.
    """

    def __init__(
        self, message: str, *, kind: ErrorKind, status: int | None = None, body: str | None = None
    ) -> None:
        super().__init__(message, status=status, body=body)
        self.kind: ErrorKind = kind
