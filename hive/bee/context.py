"""Keeping a bee's conversation within its model's context window. Pure.

What grows a conversation is tool output, and it is also what a bee can get back by running the tool again,
so old tool results go first: the oldest are replaced by a one-line stub until the conversation fits. The
system prompt, the task, the bee's own words, the notes delivered to it and its latest tool results stay;
only when the latest result alone is more than the model can take is it cut short (:func:`cut_latest`).

Two triggers: the brief's ``context_tokens`` budget, checked before every model call against an estimate
(:data:`CHARS_PER_TOKEN`), and a provider that refuses a request as longer than its model's context, which
halves the conversation and asks again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from hive.providers.base import Message, ProviderError

CHARS_PER_TOKEN = 4
"""A rough count for English and code; the budget leaves room for the error."""
KEEP_RECENT_TOOL_RESULTS = 4
"""The latest tool results are not elided to meet the budget: the model is working on them. A model that
refuses the prompt as too long keeps only its latest one."""
PER_MESSAGE_TOKENS = 4
"""What a message costs beyond its text (role, separators), in the estimate."""

_OVERFLOW = re.compile(
    r"context[ _-]?(length|window|size|limit)|maximum context|too many tokens|prompt is too long"
    r"|input is too long|reduce the length|exceeds? (the )?(model'?s? )?(max|context)|maximum model length"
    r"|inputs`? tokens \+ `?max_new_tokens",
    re.IGNORECASE,
)
_STUB = re.compile(r"\A\[the .* result of an earlier step was elided")
MIN_CUT_CHARS = 1000
"""Characters of the latest tool result kept at least when it is cut to fit the context."""
_CUT_NOTE = ("\n… [cut here to keep the conversation within the model's context: {more} more characters; "
             "running the same call again gives the same cut: ask for a narrower part, e.g. read's offset and "
             "limit, or a more specific pattern]")
_CUT = re.compile(r"\n… \[cut here to keep the conversation within the model's context: (?P<more>\d+) more characters;"
                  r"[^\n]*\]\Z")


def estimated_tokens(messages: Sequence[Message]) -> int:
    """About how many tokens ``messages`` take: their text (tool-call arguments included) at
    :data:`CHARS_PER_TOKEN` characters a token, plus a few for each message."""
    chars = 0
    for message in messages:
        chars += len(message.content)
        for call in message.tool_calls:
            chars += len(call.name) + len(str(call.arguments))
    return chars // CHARS_PER_TOKEN + PER_MESSAGE_TOKENS * len(messages)


def elided(message: Message) -> Message:
    """A tool result replaced by a stub that says what it was and how to get it back."""
    name = message.name or "tool"
    stub = (f"[the {name} result of an earlier step was elided to keep the conversation within the model's "
            f"context ({len(message.content)} characters); run the tool again if you need it]")
    return dataclasses.replace(message, content=stub)


def fit(
    messages: Sequence[Message], budget_tokens: int, keep_recent: int = KEEP_RECENT_TOOL_RESULTS
) -> tuple[list[Message], int]:
    """``messages`` with their oldest tool results (all but the latest ``keep_recent``, and none shorter than
    its stub) elided until the estimate is within ``budget_tokens``, and how many were elided (0 when it
    already fits, or when nothing is left that may be elided)."""
    fitted = list(messages)
    over = estimated_tokens(fitted) - budget_tokens
    if over <= 0:
        return fitted, 0
    tool_results = [i for i, m in enumerate(fitted) if m.role == "tool" and not is_elided(m)]
    count = 0
    for index in tool_results[: max(0, len(tool_results) - keep_recent)]:
        if over <= 0:
            break
        stub = elided(fitted[index])
        saved = len(fitted[index].content) - len(stub.content)
        if saved <= 0:  # a short result ("no matches") costs less than the stub that would say it was elided
            continue
        over -= saved // CHARS_PER_TOKEN
        fitted[index] = stub
        count += 1
    return fitted, count


def is_elided(message: Message) -> bool:
    """Whether ``message`` is the stub :func:`elided` left of a tool result."""
    return message.role == "tool" and _STUB.match(message.content) is not None


def cut_latest(messages: Sequence[Message], budget_tokens: int) -> tuple[list[Message], int | None]:
    """``messages`` with the latest tool result cut short (its start kept, never below :data:`MIN_CUT_CHARS`)
    so that the estimate is within ``budget_tokens``, and the characters it keeps; ``None`` when nothing was
    cut (it fits already, or the latest result cannot be made any shorter).

    The last resort, once every older result is elided: one long read is more than a small window holds
    (a tool's output is capped at 20,000 characters, some 5,000 tokens, past a 4k-token model's whole window).
    """
    fitted = list(messages)
    over = estimated_tokens(fitted) - budget_tokens
    latest = next((i for i in range(len(fitted) - 1, -1, -1) if fitted[i].role == "tool" and not is_elided(fitted[i])),
                  None)
    if over <= 0 or latest is None:
        return fitted, None
    text = fitted[latest].content
    # A result cut before is cut again from what it kept, and its note counts from the whole.
    earlier = _CUT.search(text)
    kept, whole = (earlier.start(), earlier.start() + int(earlier["more"])) if earlier else (len(text), len(text))
    keep = max(MIN_CUT_CHARS, len(text) - over * CHARS_PER_TOKEN - len(_CUT_NOTE) - 20)
    if keep >= kept:
        return fitted, None
    fitted[latest] = dataclasses.replace(fitted[latest], content=text[:keep] + _CUT_NOTE.format(more=whole - keep))
    return fitted, keep


def shrink(
    messages: Sequence[Message], budget_tokens: int, keep_recent: int = KEEP_RECENT_TOOL_RESULTS
) -> tuple[list[Message], int, int | None]:
    """``messages`` made to fit ``budget_tokens`` as far as they can be: the oldest tool results elided
    (:func:`fit`); when the latest ``keep_recent`` alone are over it (a small window, several long reads in a
    row), all but the very latest too; and when that one alone is, it is cut short (:func:`cut_latest`). Past
    the budget a local model cuts the prompt silently, and a model that refuses it would fail the bee.

    Returns the messages, how many results were elided, and the characters the cut one keeps (``None``: none
    was cut)."""
    fitted, count = fit(messages, budget_tokens, keep_recent)
    if keep_recent > 1 and estimated_tokens(fitted) > budget_tokens:
        fitted, more = fit(fitted, budget_tokens, 1)
        count += more
    fitted, kept = cut_latest(fitted, budget_tokens)
    return fitted, count, kept


def is_context_overflow(error: BaseException) -> bool:
    """A provider's refusal of a request as longer than its model's context (OpenAI's
    ``context_length_exceeded``, vLLM's "maximum context length" and "longer than the maximum model length",
    llama.cpp's "exceeds the available context size", Hugging Face TGI's "`inputs` tokens + `max_new_tokens`
    must be <=", Anthropic's "prompt is too long"), rather than any other bad request."""
    if not isinstance(error, ProviderError) or error.kind != "bad_request":
        return False
    return error.status == 413 or _OVERFLOW.search(f"{error} {error.body or ''}") is not None
