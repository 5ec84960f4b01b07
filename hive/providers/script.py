"""``script:<file>``: a model that plays back a JSON script, for tests, demos and reproducible runs.

The file::

    {"angles": ["...", "..."],
     "bees": {"bee-1": [TURN, ...], "bee-2": [...], "verify-1": [...]},
     "answer": "..."}

    TURN = {"say": "assistant text", "tools": [{"name": "grep", "args": {...}}], "delay": seconds}

Every field is optional. Who is asking is the ``agent`` the model was made for: a bee id gets that bee's next
turn (after its ``delay``); ``planner`` gets ``angles`` as a JSON array; ``answer`` gets ``answer``. A turn's
tools become real tool calls (the bee runs them); a turn without tools is the bee's final report; a bee whose
turns are used up says ``(script ended)``. Each bee runs in its own process with its own model, so the turn
counter lives in the model instance. It starts past the replies already in the conversation, so a bee resumed
from its transcript (``hive resume``) goes on with its next turn.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hive.errors import SpecError
from hive.providers.base import Message, ModelResponse, ModelSettings, TokenUsage, ToolCall, ToolSpec

SCRIPT_ENDED = "(script ended)"
PLANNER = "planner"
ANSWER = "answer"


class ScriptTool(BaseModel):
    """One tool call in a turn."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)


class ScriptTurn(BaseModel):
    """One reply of a bee's model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    say: str = ""
    tools: list[ScriptTool] = Field(default_factory=list)
    delay: float = Field(default=0.0, ge=0, le=86_400, strict=True)
    """Seconds to wait before replying, to make timing visible in demos and tests (a number, at most a day)."""


class Script(BaseModel):
    """A whole script file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    angles: list[str] = Field(default_factory=list)
    bees: dict[str, list[ScriptTurn]] = Field(default_factory=dict)
    answer: str = ""


def load_script(path: str | Path) -> Script:
    """Read and validate a script file; raise :class:`SpecError` in one line naming the file and problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"script file {str(path)!r}: not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"script file {str(path)!r}: cannot be read ({type(exc).__name__})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise SpecError(f"script file {str(path)!r}: not valid JSON ({exc})") from None
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        raise SpecError(f"script file {str(path)!r}: {_first_problem(exc)}") from None


def _first_problem(exc: ValidationError) -> str:
    errors = exc.errors()
    first = errors[0]
    where = ""
    for part in first["loc"]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    what = "unknown field" if first["type"] == "extra_forbidden" else first["msg"].lower()
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    return f"{where or 'top level'}: {what}{more}"


def estimate_tokens(text: str) -> int:
    """A rough token count (four characters a token), so scripted runs show plausible usage."""
    return len(text) // 4


class ScriptModel:
    """Plays back a :class:`Script` for one agent: a bee id, ``planner`` or ``answer``."""

    def __init__(self, script: Script, *, path: str, agent: str) -> None:
        self.name = f"script:{path}"
        self.script = script
        self.agent = agent
        self._turns_taken = 0
        self._calls_made = 0
        self._asked = False

    def __repr__(self) -> str:
        return f"ScriptModel({self.name!r}, agent={self.agent!r})"

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """The agent's next scripted reply."""
        tool_calls: tuple[ToolCall, ...] = ()
        if self.agent == PLANNER:
            text = json.dumps(self.script.angles)
        elif self.agent == ANSWER:
            text = self.script.answer
        else:
            turns = self.script.bees.get(self.agent, [])
            if not self._asked:
                # A conversation picked up again (``hive resume``) goes on with the turn after its last reply.
                self._turns_taken = sum(m.role == "assistant" for m in messages)
                self._calls_made = sum(len(m.tool_calls) for m in messages)
                self._asked = True
            if self._turns_taken >= len(turns):
                text = SCRIPT_ENDED
            else:
                turn = turns[self._turns_taken]
                self._turns_taken += 1
                if turn.delay:
                    await asyncio.sleep(turn.delay)
                text = turn.say
                tool_calls = tuple(self._tool_call(tool) for tool in turn.tools)
        spoken = text + "".join(json.dumps(call.arguments) for call in tool_calls)
        usage = TokenUsage(
            input_tokens=estimate_tokens("".join(m.content for m in messages)),
            output_tokens=estimate_tokens(spoken),
        )
        return ModelResponse(text=text, tool_calls=tool_calls, usage=usage, model=self.name)

    def _tool_call(self, tool: ScriptTool) -> ToolCall:
        self._calls_made += 1
        return ToolCall(id=f"call-{self.agent}-{self._calls_made}", name=tool.name, arguments=dict(tool.args))

    async def aclose(self) -> None:
        """Nothing to release."""
