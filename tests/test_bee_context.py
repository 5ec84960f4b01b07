"""A bee's conversation stays within its model's context: old tool results are elided first, by the budget
before a call and again when the provider refuses a prompt as too long."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hive.bee import context
from hive.providers.base import Message, ModelResponse, ModelSettings, ProviderError, ToolCall, ToolSpec
from hive.records import Activity
from hive.testing import FunctionModel
from tests.test_bee_loop import FIRST_REPORT, Bee, RecordingToolbox, read, tool_reply

BIG = "x" * 8000  # about 2000 tokens a tool result


def conversation(results: int) -> list[Message]:
    messages = [Message("system", "You investigate."), Message("user", "Find the bug.")]
    for i in range(results):
        call = ToolCall(id=f"c{i}", name="read", arguments={"path": f"f{i}.py"})
        messages += [Message("assistant", f"Reading f{i}.py", tool_calls=(call,)),
                     Message("tool", BIG, tool_call_id=f"c{i}", name="read")]
    return messages


def test_a_conversation_within_the_budget_is_left_alone() -> None:
    messages = conversation(3)
    assert context.fit(messages, 100_000) == (messages, 0)


def test_the_oldest_tool_results_go_first_and_the_latest_four_stay() -> None:
    messages = conversation(10)
    before = context.estimated_tokens(messages)
    fitted, count = context.fit(messages, before - 5000)
    assert count == 3  # ~2000 tokens each
    tools = [m for m in fitted if m.role == "tool"]
    assert all("elided" in m.content and "8000 characters" in m.content for m in tools[:3])
    assert [m.content for m in tools[3:]] == [BIG] * 7
    assert [m for m in fitted if m.role != "tool"] == [m for m in messages if m.role != "tool"]
    assert context.estimated_tokens(fitted) <= before - 5000


def test_when_only_the_latest_results_are_left_nothing_more_is_elided() -> None:
    fitted, count = context.fit(conversation(10), 10)
    assert count == 6
    again, more = context.fit(fitted, 10)
    assert (again, more) == (fitted, 0)  # stubs are not elided twice, the latest four stay


@pytest.mark.parametrize("message", [
    "This model's maximum context length is 8192 tokens. However, your messages resulted in 9500 tokens.",
    "prompt is too long: 210000 tokens > 200000 maximum",
    "the request exceeds the available context size, try increasing it",
    "Input is too long for requested model.",
])
def test_a_context_overflow_is_told_from_other_bad_requests(message: str) -> None:
    assert context.is_context_overflow(ProviderError(message, kind="bad_request", status=400))
    assert not context.is_context_overflow(ProviderError("unknown parameter: foo", kind="bad_request", status=400))
    assert not context.is_context_overflow(ProviderError(message, kind="server", status=500))
    assert context.is_context_overflow(ProviderError("Payload Too Large", kind="bad_request", status=413))


def window_model(limit_chars: int, seen: list[list[Message]]) -> FunctionModel:
    """A model with a small context: it refuses a prompt over ``limit_chars`` as vLLM does, reads five files,
    then reports."""

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> ModelResponse:
        if sum(len(m.content) for m in messages) > limit_chars:
            raise ProviderError("This model's maximum context length is 4096 tokens", kind="bad_request",
                                status=400)
        seen.append(messages)
        reads = sum(m.role == "tool" for m in messages)
        return tool_reply(read(f"f{reads}.py"), text="") if reads < 6 else ModelResponse(text=FIRST_REPORT)

    return FunctionModel(reply)


async def test_a_bee_whose_model_refuses_a_long_prompt_elides_old_results_and_reports(tmp_path: Path) -> None:
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, window_model(30_000, seen), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0)
    report = await bee.run()
    assert (report.outcome, report.text) == ("reported", FIRST_REPORT)
    assert len(bee.toolbox.calls) == 6
    final = seen[-1]
    assert any(m.role == "tool" and "elided" in m.content for m in final)
    assert [m.content for m in final if m.role == "tool"][-2:] == [BIG, BIG]
    elisions = [e for e in bee.entries() if e.event == "elided"]
    assert elisions and all(e.data and e.data["why"] == "the model's context is full" for e in elisions)
    assert any("old tool results elided" in a.text for a in bee.sent(Activity))


async def test_the_budget_elides_before_the_model_is_asked(tmp_path: Path) -> None:
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, window_model(10**9, seen), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0,
              context_tokens=10_000)
    assert (await bee.run()).outcome == "reported"
    assert max(context.estimated_tokens(messages) for messages in seen) <= 10_000
    assert all(e.data and e.data["why"] == "over the context budget" for e in bee.entries() if e.event == "elided")


async def test_a_prompt_too_long_even_with_everything_elided_fails_the_bee_with_the_provider_s_words(
    tmp_path: Path,
) -> None:
    def refuse(*_: Any) -> ModelResponse:
        raise ProviderError("This model's maximum context length is 10 tokens", kind="bad_request", status=400)

    report = await Bee(tmp_path, FunctionModel(refuse)).run()
    assert report.outcome == "failed" and "maximum context length is 10 tokens" in (report.reason or "")


def test_a_role_s_context_tokens_reach_its_bees_briefs(tmp_path: Path) -> None:
    import asyncio
    import json

    from hive.coordinator import Coordinator
    from tests.hive_runs import only_run
    from tests.test_coordinator_usage import two_bee_options

    opts = two_bee_options(tmp_path, f"script:{tmp_path / 'script.json'}", angles=("a", "b"))
    role = opts.repo / ".hive" / "roles" / "investigator.md"
    role.write_text(role.read_text().replace("\nmodel:", "\ncontext_tokens: 5000\nmodel:", 1))
    asyncio.run(Coordinator(opts).run())
    brief = json.loads((only_run(tmp_path / "runs") / "bees" / "bee-1" / "brief.json").read_text())
    assert brief["context_tokens"] == 5000
