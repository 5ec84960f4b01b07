"""Picking a conversation up again from the bee's own transcript (``hive resume``).

The transcript holds every message the bee sent to its model and every reply, tool call and tool result,
so the conversation can be rebuilt as the model last saw it. Pure: the caller reads the file.

What cannot be rebuilt is said in the conversation itself: a tool call whose result never made it to the
transcript (the run stopped while it ran) gets a result saying it was not completed, because a model API
refuses an assistant tool call with no answer.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from hive.providers.base import Message, ToolCall
from hive.records import TranscriptEntry

NOT_COMPLETED = "(not completed: the run stopped while this tool ran)"


@dataclass(frozen=True)
class Resumed:
    """The conversation so far, without its system prompt (the bee writes that afresh)."""

    messages: list[Message]
    replies: int
    """Model replies in it: they count against the bee's step limit."""
    spoken: list[str]
    """The text of every reply, for numbering utterances past the ones already sent."""


def _tool_calls(entry: TranscriptEntry) -> tuple[ToolCall, ...]:
    calls = (entry.data or {}).get("tool_calls") or []
    return tuple(
        ToolCall(id=str(c.get("id", "")), name=str(c.get("name", "")), arguments=dict(c.get("arguments") or {}),
                 error=c.get("error"))
        for c in calls if isinstance(c, dict)
    )


def resume_conversation(entries: Iterable[TranscriptEntry]) -> Resumed:
    """The messages an earlier run of this bee had built, in order, from its transcript entries."""
    messages: list[Message] = []
    pending: dict[str, ToolCall] = {}
    replies = 0
    spoken: list[str] = []

    def answer_pending() -> None:
        for call in pending.values():
            messages.append(Message("tool", NOT_COMPLETED, tool_call_id=call.id, name=call.name))
        pending.clear()

    for entry in entries:
        if entry.event == "message" and entry.role == "user":
            answer_pending()
            text = entry.content or ""
            if (entry.data or {}).get("appended") and messages and messages[-1].role == "user":
                messages[-1] = Message("user", f"{messages[-1].content}\n\n{text}")
            else:
                messages.append(Message("user", text))
        elif entry.event == "reply":
            answer_pending()
            calls = _tool_calls(entry)
            messages.append(Message("assistant", entry.content or "", tool_calls=calls))
            pending = {c.id: c for c in calls}
            replies += 1
            spoken.append(entry.content or "")
        elif entry.event == "tool_result" and entry.call_id in pending:
            call = pending.pop(entry.call_id)
            messages.append(Message("tool", entry.content or "", tool_call_id=call.id, name=call.name))
    answer_pending()
    return Resumed(messages, replies, spoken)
