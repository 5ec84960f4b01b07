"""The bee's agent loop: model call → tool calls → model call → … → final report.

:class:`BeeLoop` is driven by what it is given (a model, a toolbox, a channel to the coordinator, a
transcript and a clock), so tests run it in-process with the doubles of :mod:`hive.testing` and a
:class:`~hive.bee.channel.MemoryChannel`. The process wiring is in :mod:`hive.bee.process`.

What the loop does besides calling the model and its tools:

- **Utterances.** The bee's own prose (≥ 40 characters, or a marked statement) goes to the coordinator as
  publish candidates, split at ``FOUND:`` / ``DEAD END:`` / ``DECIDED:`` / ``BLOCKED:`` markers. Tool output
  never does.
- **Inbox.** Delivered notes are injected as one message before the next model call. Notes that arrive
  while the bee writes its final report trigger exactly one last call.
- **Checkpoint.** After ``checkpoint_every`` tool calls without an utterance, the bee is asked to state
  what it has established. A short marked reply to it is a statement, not the final report.
- **Budgets.** A wrap-up from the coordinator, the time limit, the step limit or the token budget closes
  the tools and asks for the final report, due within the brief's grace; the outcome is then ``cut_short``
  with the reason. A wrap-up also stops a tool call already running, and a model call in flight keeps only
  half the grace.
- **Loop guard.** A third identical tool call is not run and gets a nudge; a fourth ends the bee, ``failed``.
- **Outcomes.** Every run ends in one :class:`~hive.records.Report`: ``reported``, ``cut_short``,
  ``failed`` (a guard or an error hive raised on purpose, e.g. a model error retries did not get past) or
  ``crashed`` (anything unexpected). A ``stop`` from the coordinator ends it at once, ``cut_short``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import json
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import orjson

from hive.bee import context, prompts
from hive.bee.channel import Channel, ChannelClosed
from hive.bee.inbox import Drained, Inbox
from hive.bee.resume import Resumed
from hive.bee.transcript import Transcript, truncate
from hive.errors import HiveError
from hive.providers.base import (
    Message,
    Model,
    ModelResponse,
    ModelSettings,
    ProviderError,
    ToolCall,
    ToolSpec,
    valid_text,
)
from hive.records import (
    Activity,
    BeeBrief,
    BeeMessage,
    BeeOutcome,
    Notes,
    Received,
    Report,
    Stop,
    Usage,
    Utterance,
    WrapUp,
)
from hive.secrets import Scrubber
from hive.tools.base import ToolResult
from hive.wording import plural

log = logging.getLogger("hive.bee")

MIN_UTTERANCE = 40
"""Characters of prose below which a piece is not a publish candidate."""
LOOP_NUDGE_AT = 3
LOOP_FAIL_AT = 4
TOOL_TURNS_AFTER_TIME_UP = 2
"""Replies that still call tools after "time is up" before the bee is ended with what it has."""
IN_FLIGHT_SHARE = 0.5
"""Share of the grace a model call already in flight when a wrap-up arrives may still take."""
CHECKPOINT_STATEMENT_MAX = 1200
"""Characters: a marked reply to a checkpoint longer than this is taken as the final report instead."""

_MARKER = re.compile(r"^[ \t]*(?:[-*][ \t]+)?(?:\*\*)?(?:FOUND|DEAD END|DECIDED|BLOCKED)\b", re.MULTILINE)


class Toolbox(Protocol):
    """What the loop needs of :class:`hive.tools.registry.Toolbox`."""

    def specs(self) -> list[ToolSpec]: ...

    async def call(self, name: str, args: dict[str, Any]) -> ToolResult: ...

    async def aclose(self) -> None: ...


def split_utterances(text: str) -> list[str]:
    """The publish candidates in one reply's prose: one per marked statement, each ≥ 40 characters unless
    it is marked (a short ``FOUND:`` is a statement the bee chose to make, not chatter).

    A reply with fewer than two markers is one piece; a reply with several is cut before each marker,
    so every ``FOUND:`` is judged on its own.
    """
    starts = [m.start() for m in _MARKER.finditer(text)]
    if len(starts) < 2:
        pieces = [text]
    else:
        bounds = [0, *starts[1:], len(text)] if starts[0] == 0 else [0, *starts, len(text)]
        pieces = [text[a:b] for a, b in itertools.pairwise(bounds)]
    return [p.strip() for p in pieces if len(p.strip()) >= MIN_UTTERANCE or _is_marked_statement(p.strip())]


def _is_marked_statement(piece: str) -> bool:
    """A marker followed by some words of its own."""
    match = _MARKER.match(piece)
    return match is not None and len(piece[match.end():].split()) >= 2


def is_checkpoint_statement(text: str) -> bool:
    """A reply that answers a checkpoint (starts with a marker) rather than handing in the report."""
    return _MARKER.match(text.strip()) is not None and len(text.strip()) <= CHECKPOINT_STATEMENT_MAX


class _Ended(Exception):
    """Ends the loop early with a given outcome (the loop guard)."""

    def __init__(self, outcome: BeeOutcome, reason: str) -> None:
        super().__init__(reason)
        self.outcome: BeeOutcome = outcome
        self.reason = reason


class _Abandoned(Exception):
    """A model call given up on because a wrap-up arrived while it was in flight."""


def storable(reply: ModelResponse) -> ModelResponse:
    """``reply`` as the transcript, the loop guard and the coordinator can write it down, or a crash later.

    Lone surrogates in its text or its tool calls become U+FFFD. Arguments that still cannot be encoded (an
    integer past 64 bits, which Python's JSON parser reads happily) make a call malformed, returned to the model
    as a tool error like invalid JSON.
    """

    def call(wire: ToolCall) -> ToolCall:
        clean = dataclasses.replace(
            wire, id=valid_text(wire.id), name=valid_text(wire.name), arguments=valid_text(wire.arguments),
            raw=valid_text(wire.raw),
        )
        if clean.error is not None:
            return clean
        try:
            orjson.dumps(clean.arguments)
        except TypeError as e:
            raw = json.dumps(clean.arguments, default=str)
            return dataclasses.replace(clean, arguments={}, error=f"invalid JSON arguments: {e}", raw=raw)
        return clean

    return dataclasses.replace(reply, text=valid_text(reply.text), tool_calls=tuple(map(call, reply.tool_calls)))


def _call_key(name: str, args: dict[str, Any]) -> str:
    return name + "\x00" + orjson.dumps(args, option=orjson.OPT_SORT_KEYS, default=str).decode()


def _format_seconds(seconds: float) -> str:
    return f"{seconds / 60:g} min" if seconds >= 60 else f"{seconds:g} s"


class BeeLoop:
    """One bee's investigation, from the system prompt to the report. Run it once with :meth:`run`."""

    def __init__(
        self,
        brief: BeeBrief,
        *,
        model: Model,
        toolbox: Toolbox,
        channel: Channel,
        transcript: Transcript,
        system_prompt: str,
        clock: Callable[[], float] = time.monotonic,
        scrubber: Scrubber | None = None,
        settings: ModelSettings | None = None,
        resumed: Resumed | None = None,
    ) -> None:
        self.brief = brief
        self._resumed = resumed
        self._model = model
        self._toolbox = toolbox
        self._channel = channel
        self._transcript = transcript
        self._system_prompt = system_prompt
        self._clock = clock
        self._scrub = scrubber or Scrubber(())
        self._settings = settings or ModelSettings()

        self._messages: list[Message] = []
        self._inbox = Inbox()
        self._wrap_up: str | None = None
        self._wrap_up_at: float | None = None
        """Event-loop time the wrap-up arrived; the report is due within the grace of it."""
        self._wrapping = asyncio.Event()
        self._stop_reason: str | None = None
        self._closed: str | None = None
        """Why the tools are closed; ``None`` while they are open."""
        self._grace_ends: float | None = None
        """Event-loop time by which the final report is due, once the tools are closed."""
        self._told_time_up = False
        self._steps = 0
        self._tokens = 0
        self._silent_calls = 0
        self._checkpoint_asked = False
        self._seq = 0
        self._said: list[str] = []
        self._report: str | None = None
        self._call_counts: dict[str, int] = {}
        self._result_calls: dict[int, str] = {}
        """Index in the conversation of each tool result a tool call produced → that call's loop-guard key."""
        self._context_budget = brief.context_tokens
        """Tokens the conversation is kept under: the brief's, lowered each time the model refuses a prompt as
        too long, so that a small window is not found anew, by a refused request, at every step."""
        self._started = 0.0
        self._work: asyncio.Task[tuple[str, BeeOutcome, str | None]] | None = None
        self._specs: list[ToolSpec] = toolbox.specs()
        if resumed is not None:
            # The earlier replies count against the step limit, and utterance numbers go on past every
            # utterance they can have carried, so no two gate rows name the same utterance.
            self._steps = resumed.replies
            self._seq = sum(len(split_utterances(text)) for text in resumed.spoken)

    # ------------------------------------------------------------------ the run

    async def run(self) -> Report:
        """Investigate until a report, a budget, a stop or an error; send and return the :class:`Report`."""
        self._started = self._clock()
        work = self._work = asyncio.create_task(self._investigate())
        reader = asyncio.create_task(self._read_channel())
        try:
            await asyncio.wait({work})
        finally:
            work.cancel()
            reader.cancel()
            await asyncio.gather(work, reader, return_exceptions=True)
        report = self._conclude(work)
        self._transcript.write("report", content=report.text, data={"outcome": report.outcome, "reason": report.reason})
        with contextlib.suppress(ChannelClosed):
            self._channel.send(report)
        return report

    def request_stop(self, reason: str) -> None:
        """End the run now (a ``stop`` message, the coordinator gone, a signal)."""
        if self._stop_reason is None:
            self._stop_reason = reason
        if self._work is not None:
            self._work.cancel()

    def _conclude(self, work: asyncio.Task[tuple[str, BeeOutcome, str | None]]) -> Report:
        outcome: BeeOutcome
        reason: str | None
        if work.cancelled():
            text, outcome, reason = self._partial(), "cut_short", self._stop_reason or "stopped"
        elif (exc := work.exception()) is None:
            text, outcome, reason = work.result()
        elif isinstance(exc, _Ended):
            text, outcome, reason = self._partial(), exc.outcome, exc.reason
        elif isinstance(exc, ChannelClosed):
            text, outcome, reason = self._partial(), "cut_short", "the coordinator closed the channel"
        elif isinstance(exc, HiveError):
            text, outcome, reason = (
                self._partial(),
                "failed",
                prompts.one_line(str(exc)) or type(exc).__name__,
            )
        else:
            log.error("bee %s crashed", self.brief.bee, exc_info=exc)
            reason = prompts.one_line(f"{type(exc).__name__}: {exc}")
            self._transcript.write("error", content=reason)
            text, outcome = self._partial(), "crashed"
        return Report(
            bee=self.brief.bee,
            text=self._scrub.text(text),
            outcome=outcome,
            reason=None if reason is None else self._scrub.text(reason),
        )

    def _partial(self) -> str:
        """The best report there is when the bee did not finish one: its report, else what it said."""
        if self._report is not None:
            return self._report
        return "\n\n".join(self._said)

    async def _read_channel(self) -> None:
        while True:
            message = await self._channel.receive()
            if message is None:
                self.request_stop("the coordinator closed the channel")
                return
            if isinstance(message, Notes):
                self._inbox.add(message.items)
            elif isinstance(message, WrapUp):
                if self._wrap_up is None:
                    self._wrap_up = prompts.one_line(message.reason).rstrip(".") or "wrap-up requested"
                    self._wrap_up_at = asyncio.get_running_loop().time()
                    self._wrapping.set()
                    # The tools close at once: a command still running is stopped, so the grace goes to the
                    # report rather than to a long test run.
                    await self._toolbox.aclose()
            elif isinstance(message, Stop):
                self.request_stop("stopped")
                return

    # ------------------------------------------------------------------ the conversation

    async def _investigate(self) -> tuple[str, BeeOutcome, str | None]:
        self._add_message(Message("system", self._system_prompt))
        if self._resumed is None or not self._resumed.messages:
            self._add_user(prompts.kickoff(self.brief))
        else:
            self._messages.extend(self._resumed.messages)  # already in the transcript, not written again
            self._add_user(prompts.RESUMED)
        tool_turns_after_time_up = 0
        asked_after_empty_reply = False
        while True:
            self._prepare_turn()
            answering_checkpoint = self._checkpoint_asked
            self._checkpoint_asked = False
            try:
                reply = await self._ask()
            except _Abandoned:
                continue
            text = reply.text.strip()
            if reply.tool_calls:
                self._speak(text)
                self._add_message(Message("assistant", reply.text, tool_calls=reply.tool_calls))
                if self._told_time_up:
                    tool_turns_after_time_up += 1
                    if tool_turns_after_time_up > TOOL_TURNS_AFTER_TIME_UP:
                        assert self._closed is not None
                        return self._partial(), "cut_short", f"{self._closed}; kept calling tools after that"
                await self._run_tools(reply.tool_calls)
                continue
            self._add_message(Message("assistant", reply.text))
            if answering_checkpoint and self._closed is None and is_checkpoint_statement(text):
                self._speak(text)
                self._add_user(prompts.CARRY_ON)
                continue
            if not text and self._closed is None and not asked_after_empty_reply:
                # An empty reply (a local model that stops after a tool result, a reasoning model that spent its
                # tokens thinking) is not a report: ask once more before taking it as one.
                asked_after_empty_reply = True
                self._add_user(prompts.EMPTY_REPLY)
                continue
            # Still nothing: what the bee said along the way is its report, not "(no report)".
            report = await self._last_call(text or self._partial() or "(no report)")
            if self._closed is not None:
                return report, "cut_short", self._closed
            return report, "reported", None

    def _prepare_turn(self) -> None:
        """Everything due before the next model call, merged into one user message."""
        parts: list[str] = []
        drained = self._drain_inbox()
        if drained.items:
            parts.append(prompts.notes_message(drained.items, self.brief.bee))
        self._close_if_over_budget(before_model_call=True)
        if self._closed is not None and not self._told_time_up:
            parts.append(prompts.time_up(self._closed))
            self._told_time_up = True
        elif self._closed is None and 0 < self.brief.checkpoint_every <= self._silent_calls:
            parts.append(prompts.CHECKPOINT)
            self._silent_calls = 0
            self._checkpoint_asked = True
        if parts:
            self._add_user("\n\n".join(parts))

    async def _last_call(self, report: str) -> str:
        """One more turn if notes arrived while the bee was finishing; never a third."""
        self._report = report
        drained = self._drain_inbox()
        if not drained.items:
            return report
        self._add_user(prompts.last_call(drained.items, self.brief.bee))
        reply = await self._ask()
        if reply.tool_calls:
            self._transcript.write("error", content="tool calls in the last-call reply were not run")
        self._add_message(Message("assistant", reply.text))
        text = reply.text.strip()
        if not text or prompts.is_no_change(text):
            return report
        self._report = text
        return text

    def _drain_inbox(self) -> Drained:
        drained = self._inbox.drain()
        if drained.items or drained.withheld:
            received = Received(bee=self.brief.bee, delivered=drained.delivered, withheld=list(drained.withheld))
            self._transcript.write("notes", data={"delivered": received.delivered, "withheld": received.withheld})
            self._send(received)
        return drained

    def _close_if_over_budget(self, *, before_model_call: bool) -> None:
        """Close the tools when a budget is spent, and start the grace for the final report.

        Steps and tokens are spent by model calls, so they are checked only before one: the tool calls of
        the last allowed step still run. A wrap-up and the clock also stop the tool calls of a step.
        """
        if self._closed is not None:
            return
        reason: str | None = None
        if self._wrap_up is not None:
            reason = self._wrap_up
        elif self._clock() - self._started >= self.brief.time_limit:
            reason = f"time limit reached ({_format_seconds(self.brief.time_limit)})"
        elif not before_model_call:
            return
        elif self._steps >= self.brief.max_steps:
            reason = f"step limit reached ({self.brief.max_steps} steps)"
        elif self.brief.token_budget is not None and self._tokens >= self.brief.token_budget:
            reason = f"token budget reached ({self._tokens} of {self.brief.token_budget} tokens)"
        if reason is not None:
            self._closed = reason
            # The coordinator counts the grace from the wrap-up it sent, so the bee does too.
            start = self._wrap_up_at if self._wrap_up_at is not None else asyncio.get_running_loop().time()
            self._grace_ends = start + self.brief.grace

    async def _ask(self) -> ModelResponse:
        if self._closed is None:
            self._steps += 1
        learnt = self._context_budget < self.brief.context_tokens
        self._fit_context(self._context_budget, "the model's context is full" if learnt else "over the context budget")
        while True:
            try:
                reply = await self._request()
                break
            except ProviderError as e:
                # The model's context is smaller than the budget guessed: halve the conversation and ask again,
                # until nothing is left to elide; later steps keep under three quarters of what was refused.
                refused = context.estimated_tokens(self._messages)
                if not context.is_context_overflow(e) or not self._fit_context(
                    refused // 2, "the model's context is full", keep_recent=1
                ):
                    raise
                self._context_budget = min(self._context_budget, refused * 3 // 4)
        reply = storable(reply)
        self._tokens += reply.usage.total
        model = reply.model or self._model.name
        self._transcript.write(
            "reply",
            role="assistant",
            content=reply.text,
            data={
                "model": model,
                "tool_calls": [
                    {
                        "id": c.id,
                        "name": c.name,
                        "arguments": c.arguments,
                        **({"error": c.error} if c.error else {}),
                    }
                    for c in reply.tool_calls
                ],
            },
        )
        usage = Usage(
            bee=self.brief.bee,
            model=model,
            input_tokens=reply.usage.input_tokens,
            output_tokens=reply.usage.output_tokens,
            cost_usd=reply.usage.cost_usd,
        )
        self._transcript.write("usage", data=usage.model_dump(exclude={"type", "bee", "at"}))
        self._send(usage)
        return reply

    async def _request(self) -> ModelResponse:
        # Once the tools are closed the model is told so by the API too, not only in words.
        settings = self._settings if self._closed is None else dataclasses.replace(self._settings, tools_closed=True)
        request = self._model.request(list(self._messages), self._specs, settings)
        # Once the tools are closed the report is due within the grace; past it the coordinator would
        # kill the bee, so it hands in what it has instead.
        grace = asyncio.timeout_at(self._grace_ends)
        try:
            async with grace:
                return await (request if self._closed is not None else self._unless_wrapped_up(request))
        except TimeoutError:
            if not grace.expired():
                raise
            raise _Ended("cut_short", f"{self._closed}; no report within the {self.brief.grace:g} s grace") from None

    def _fit_context(self, budget_tokens: int, why: str, keep_recent: int = context.KEEP_RECENT_TOOL_RESULTS) -> bool:
        """Make the conversation fit ``budget_tokens`` (:func:`hive.bee.context.shrink`); whether it got any
        shorter. A call whose result is elided no longer counts towards the loop guard: running it again is what
        the stub asks for (a cut result does count: running the same call again gives the same cut)."""
        messages = self._messages
        before = context.estimated_tokens(messages)
        fitted, count, kept = context.shrink(messages, budget_tokens, keep_recent)
        self._messages = fitted
        for index, (was, now) in enumerate(zip(messages, fitted, strict=True)):
            if was is not now and context.is_elided(now) and (key := self._result_calls.pop(index, None)):
                self._call_counts[key] -= 1
        if not count and kept is None:
            return False
        after = context.estimated_tokens(self._messages)
        done = [plural(count, "old tool result") + " elided"] if count else []
        done += [f"the latest tool result cut to {kept} characters"] if kept is not None else []
        text = f"context: {', '.join(done)} ({why}: ~{before} → ~{after} tokens)"
        self._transcript.write("elided", content=text, data={"results": count, "tokens_before": before,
                                                              "tokens_after": after, "why": why,
                                                              **({"cut_to": kept} if kept is not None else {})})
        self._send(Activity(bee=self.brief.bee, text=text, step=self._steps))
        return True

    async def _unless_wrapped_up(self, request: Awaitable[ModelResponse]) -> ModelResponse:
        """The reply to a call made with the tools open; if a wrap-up arrives meanwhile, the call keeps
        ``IN_FLIGHT_SHARE`` of the grace (its reply may still carry a finding) and is then abandoned, so
        that the rest of the grace goes to the final report rather than to a slow or hung call."""
        call = asyncio.ensure_future(request)
        wrapped = asyncio.ensure_future(self._wrapping.wait())
        try:
            await asyncio.wait({call, wrapped}, return_when=asyncio.FIRST_COMPLETED)
            if not call.done():
                assert self._wrap_up_at is not None
                deadline = self._wrap_up_at + IN_FLIGHT_SHARE * self.brief.grace
                await asyncio.wait({call}, timeout=max(0.0, deadline - asyncio.get_running_loop().time()))
            if not call.done():
                self._transcript.write("error", content=f"model call abandoned: {self._wrap_up}")
                raise _Abandoned
            return call.result()
        finally:
            call.cancel()
            wrapped.cancel()
            await asyncio.gather(call, wrapped, return_exceptions=True)

    def _speak(self, text: str) -> None:
        for piece in split_utterances(self._scrub.text(text)):
            self._seq += 1
            self._said.append(piece)
            self._silent_calls = 0
            # Written before it is sent: a coordinator stopped before it judged the utterance finds it here, and
            # `hive resume` judges it then.
            self._transcript.write("utterance", content=piece, data={"seq": self._seq})
            self._send(Utterance(bee=self.brief.bee, seq=self._seq, text=piece))

    def _add_message(self, message: Message) -> None:
        self._messages.append(message)
        if message.role in ("system", "user"):
            self._transcript.write("message", role=message.role, content=message.content)

    def _add_user(self, text: str) -> None:
        last = self._messages[-1] if self._messages else None
        if last is not None and last.role == "user":
            # Some APIs refuse two user turns in a row; extend the waiting one instead.
            self._messages[-1] = Message("user", f"{last.content}\n\n{text}")
            self._transcript.write("message", role="user", content=text, data={"appended": True})
        else:
            self._add_message(Message("user", text))

    def _send(self, message: BeeMessage) -> None:
        self._channel.send(message)

    # ------------------------------------------------------------------ tools

    async def _run_tools(self, calls: tuple[ToolCall, ...]) -> None:
        for call in calls:
            self._transcript.write(
                "tool_call",
                tool=call.name,
                args=call.arguments,
                call_id=call.id,
                data={"error": call.error, "raw": call.raw} if call.error else None,
            )
            result, key = await self._run_one(call)
            if key is not None:
                self._result_calls[len(self._messages)] = key
            self._messages.append(Message("tool", result.text, tool_call_id=call.id, name=call.name))
            self._transcript.write(
                "tool_result",
                tool=call.name,
                call_id=call.id,
                content=truncate(result.text),
                data={"ok": result.ok},
            )
            self._silent_calls += 1
            self._send(
                Activity(
                    bee=self.brief.bee,
                    text=self._scrub.text(result.activity or call.name),
                    tool=call.name,
                    step=self._steps,
                )
            )

    async def _run_one(self, call: ToolCall) -> tuple[ToolResult, str | None]:
        """The call's result, and its loop-guard key when the tool was run (a refusal or a nudge has none)."""
        self._close_if_over_budget(before_model_call=False)
        if self._closed is not None:
            return ToolResult(
                prompts.tools_closed(self._closed), ok=False, activity=f"{call.name}: refused, time is up"
            ), None
        if call.error is not None:
            return ToolResult(
                prompts.bad_arguments(call.name, call.error, call.raw),
                ok=False,
                activity=f"{call.name}: malformed arguments",
            ), None
        key = _call_key(call.name, call.arguments)
        times = self._call_counts[key] = self._call_counts.get(key, 0) + 1
        if times >= LOOP_FAIL_AT:
            args = prompts.clip(orjson.dumps(call.arguments, default=str).decode(), 120)
            self._send(
                Activity(
                    bee=self.brief.bee,
                    text=f"{call.name}: same call {times} times, stopped",
                    tool=call.name,
                    step=self._steps,
                )
            )
            raise _Ended("failed", f"loop guard: the same {call.name} call {args} was made {times} times")
        if times == LOOP_NUDGE_AT:
            return ToolResult(
                prompts.loop_nudge(call.name, times),
                ok=False,
                activity=f"{call.name}: same call {times} times, not run",
            ), None
        return await self._toolbox.call(call.name, call.arguments), key
