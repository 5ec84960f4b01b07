"""QA round 6: a bee kept within its model's context is not punished for what was elided, keeps to its
budget even when its latest tool results alone are over it, and never grows a conversation by eliding."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.bee import context
from hive.providers.base import Message, ModelResponse, ModelSettings, ProviderError, ToolCall, ToolSpec
from hive.records import Activity
from hive.testing import FunctionModel
from tests.test_bee_loop import FIRST_REPORT, Bee, RecordingToolbox, read, tool_reply

BIG = "x" * 8000  # about 2000 tokens a tool result


def cycling_reader(files: int, reads: int, seen: list[list[Message]]) -> FunctionModel:
    """A model that reads ``files`` files in turn, ``reads`` reads in all, then reports: with a small budget
    every file it comes back to was elided meanwhile, so each read is one the stub asked for."""

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> ModelResponse:
        seen.append(list(messages))
        done = sum(m.role == "tool" for m in messages)
        return tool_reply(read(f"f{done % files}.py")) if done < reads else ModelResponse(text=FIRST_REPORT)

    return FunctionModel(reply)


async def test_reading_again_what_was_elided_is_not_a_loop(tmp_path: Path) -> None:
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, cycling_reader(6, 20, seen), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0,
              context_tokens=12_000)
    report = await bee.run()
    assert (report.outcome, report.reason) == ("reported", None)
    assert len(bee.toolbox.calls) == 20  # every read was run: none was refused as "the same call 3 times"
    assert not [e for e in bee.entries() if e.event == "tool_result" and "Not run" in (e.content or "")]


async def test_a_call_repeated_while_its_result_is_still_there_is_still_a_loop(tmp_path: Path) -> None:
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, cycling_reader(1, 20, seen), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0,
              context_tokens=100_000)
    report = await bee.run()
    assert report.outcome == "failed" and "loop guard" in (report.reason or "")


async def test_the_budget_holds_when_the_latest_results_alone_are_over_it(tmp_path: Path) -> None:
    # Four 2000-token results are over a 5000-token budget: a local model that cuts a long prompt silently
    # would lose the start of the conversation, so all but the latest result go.
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, cycling_reader(8, 8, seen), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0,
              context_tokens=5000)
    assert (await bee.run()).outcome == "reported"
    assert max(context.estimated_tokens(messages) for messages in seen) <= 5000
    assert [m.content for m in seen[-1] if m.role == "tool"][-1] == BIG  # the latest result is always there


def test_a_result_shorter_than_its_stub_is_left_as_it_is() -> None:
    call = ToolCall(id="c0", name="grep", arguments={"pattern": "x"})
    short = Message("tool", "no matches", tool_call_id="c0", name="grep")
    messages = [Message("system", "s"), Message("user", "u"), Message("assistant", "", tool_calls=(call,)), short,
                Message("assistant", "y" * 8000)]
    fitted, count = context.fit(messages, 100, keep_recent=0)
    assert (fitted, count) == (messages, 0)  # a stub would have made the conversation longer


async def test_one_elided_result_is_one_result_in_the_live_view(tmp_path: Path) -> None:
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, cycling_reader(6, 6, seen), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0,
              context_tokens=10_000)
    assert (await bee.run()).outcome == "reported"
    lines = [a.text for a in bee.sent(Activity) if a.text.startswith("context:")]
    assert lines and all(line.startswith("context: 1 old tool result elided (") for line in lines)


@pytest.mark.parametrize(("status", "message"), [
    (400, "The decoder prompt (length 9000) is longer than the maximum model length of 8192. Make sure that "
          "`max_model_len` is no smaller than the number of text tokens."),  # vLLM's V1 engine
    (422, "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 8192. Given: 9000 `inputs` "
          "tokens and 1000 `max_new_tokens`"),  # Hugging Face text-generation-inference
])
def test_more_servers_refusals_of_a_long_prompt_are_told_as_such(status: int, message: str) -> None:
    assert context.is_context_overflow(ProviderError(f"openai: HTTP {status}: {message}", kind="bad_request",
                                                     status=status))


async def test_a_small_window_is_learnt_once_not_refused_at_every_step(tmp_path: Path) -> None:
    refusals = 0

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> ModelResponse:
        nonlocal refusals
        if sum(len(m.content) for m in messages) > 30_000:  # a window of about 7500 tokens
            refusals += 1
            raise ProviderError("This model's maximum context length is 7500 tokens", kind="bad_request", status=400)
        done = sum(m.role == "tool" for m in messages)
        return tool_reply(read(f"f{done}.py")) if done < 20 else ModelResponse(text=FIRST_REPORT)

    bee = Bee(tmp_path, FunctionModel(reply), toolbox=RecordingToolbox(output=BIG), checkpoint_every=0)
    assert (await bee.run()).outcome == "reported"
    assert len(bee.toolbox.calls) == 20
    assert refusals <= 2  # once to learn the window (and maybe once more to narrow it), not at each of 16 steps


def small_window_reader(limit_chars: int, reads: int, seen: list[list[Message]]) -> FunctionModel:
    """A model with a window smaller than one long tool result, which it refuses past as vLLM does."""

    def reply(messages: list[Message], tools: list[ToolSpec], settings: ModelSettings) -> ModelResponse:
        if sum(len(m.content) for m in messages) > limit_chars:
            raise ProviderError("This model's maximum context length is 4096 tokens", kind="bad_request", status=400)
        seen.append(list(messages))
        done = sum(m.role == "tool" for m in messages)
        return tool_reply(read(f"f{done}.py")) if done < reads else ModelResponse(text=FIRST_REPORT)

    return FunctionModel(reply)


async def test_one_tool_result_longer_than_the_model_s_window_is_cut_not_the_end_of_the_bee(tmp_path: Path) -> None:
    seen: list[list[Message]] = []
    capped = "y" * 20_000  # a tool's output at its cap: about 5000 tokens, past a 4k window on its own
    bee = Bee(tmp_path, small_window_reader(12_000, 3, seen), toolbox=RecordingToolbox(output=capped),
              checkpoint_every=0)
    report = await bee.run()
    assert (report.outcome, report.reason) == ("reported", None)
    latest = [m.content for m in seen[-1] if m.role == "tool"][-1]
    assert latest.startswith("y" * 1000) and "cut here to keep the conversation within the model's context" in latest
    entries = [e for e in bee.entries() if e.event == "elided"]
    assert any(e.data and e.data.get("cut_to") for e in entries)
    assert any("the latest tool result cut to" in a.text for a in bee.sent(Activity))


async def test_a_context_budget_below_one_tool_result_is_kept_to(tmp_path: Path) -> None:
    # Ollama cuts a prompt past its window silently: a role's context_tokens below the window is the only guard.
    seen: list[list[Message]] = []
    bee = Bee(tmp_path, small_window_reader(10**9, 3, seen), toolbox=RecordingToolbox(output="y" * 20_000),
              checkpoint_every=0, context_tokens=3000)
    assert (await bee.run()).outcome == "reported"
    assert max(context.estimated_tokens(messages) for messages in seen) <= 3000


def test_a_result_cut_as_short_as_it_goes_is_not_cut_again() -> None:
    call = ToolCall(id="c0", name="read", arguments={"path": "big.py"})
    messages = [Message("system", "s" * 9000), Message("user", "u"), Message("assistant", "", tool_calls=(call,)),
                Message("tool", "y" * 20_000, tool_call_id="c0", name="read")]
    once, kept = context.cut_latest(messages, 100)
    assert kept == context.MIN_CUT_CHARS
    assert context.cut_latest(once, 100) == (once, None)  # the bee then fails with the provider's words
