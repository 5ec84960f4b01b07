"""A bee picking its conversation up again from its transcript (``hive resume``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hive.bee import prompts
from hive.bee.loop import BeeLoop
from hive.bee.resume import NOT_COMPLETED, resume_conversation
from hive.errors import ModelAPIError
from hive.providers.base import Message, ToolCall
from hive.records import TranscriptEntry, Utterance
from hive.testing import ScriptedModel
from tests.test_bee_loop import FIRST_REPORT, Bee, read, tool_reply


def entry(event: str, **fields: Any) -> TranscriptEntry:
    return TranscriptEntry.model_validate({"event": event, **fields})


def reply(text: str, *calls: tuple[str, str]) -> TranscriptEntry:
    data = {"tool_calls": [{"id": i, "name": n, "arguments": {"path": "a.py"}} for i, n in calls]}
    return entry("reply", role="assistant", content=text, data=data)


def test_the_conversation_is_rebuilt_in_order_without_the_system_prompt() -> None:
    resumed = resume_conversation([
        entry("message", role="system", content="You investigate."),
        entry("message", role="user", content="Start."),
        reply("FOUND: a.py:3 is wrong.", ("c1", "read")),
        entry("tool_call", tool="read", args={"path": "a.py"}, call_id="c1"),
        entry("tool_result", tool="read", call_id="c1", content="x = 1"),
        entry("message", role="user", content="Notes from the others."),
        entry("message", role="user", content="Checkpoint.", data={"appended": True}),
        entry("usage", data={"input_tokens": 3}),
        reply("Done for now."),
    ])
    assert resumed.messages == [
        Message("user", "Start."),
        Message("assistant", "FOUND: a.py:3 is wrong.", tool_calls=(ToolCall("c1", "read", {"path": "a.py"}),)),
        Message("tool", "x = 1", tool_call_id="c1", name="read"),
        Message("user", "Notes from the others.\n\nCheckpoint."),
        Message("assistant", "Done for now."),
    ]
    assert resumed.replies == 2
    assert resumed.spoken == ["FOUND: a.py:3 is wrong.", "Done for now."]


def test_a_tool_call_the_run_stopped_in_gets_an_answer_saying_so() -> None:
    resumed = resume_conversation([
        entry("message", role="user", content="Start."),
        reply("Reading both.", ("c1", "read"), ("c2", "grep")),
        entry("tool_result", tool="read", call_id="c1", content="x = 1"),
        entry("tool_call", tool="grep", args={"path": "a.py"}, call_id="c2"),
    ])
    assert [(m.role, m.tool_call_id, m.content) for m in resumed.messages[2:]] == [
        ("tool", "c1", "x = 1"),
        ("tool", "c2", NOT_COMPLETED),
    ]


def test_an_empty_transcript_resumes_nothing() -> None:
    resumed = resume_conversation([])
    assert (resumed.messages, resumed.replies, resumed.spoken) == ([], 0, [])


async def test_a_resumed_bee_goes_on_with_its_conversation_its_steps_and_its_utterance_numbers(
    tmp_path: Path,
) -> None:
    first = Bee(tmp_path, ScriptedModel([
        tool_reply(read("cache.py"), text="FOUND: cache.py:88 never clears the entry when the write fails."),
        tool_reply(read("ttl.py"), text="Checking the TTL settings next, they may explain the rest."),
        RuntimeError("the machine went down"),
    ]), max_steps=4)
    report = await first.run()
    assert report.outcome == "crashed"
    assert [u.seq for u in first.sent(Utterance)] == [1, 2]

    model = ScriptedModel([
        tool_reply(read("ttl.py"), text="FOUND: ttl.py:12 sets no TTL for entries written on failure."),
        FIRST_REPORT,
    ])
    second = Bee(tmp_path, model, max_steps=3, resume=True)
    resumed = resume_conversation(first.entries())
    second.loop = BeeLoop(second.brief, model=model, toolbox=second.toolbox, channel=second.channel,
                          transcript=second.transcript, system_prompt="You investigate.", clock=second.clock,
                          resumed=resumed)
    report = await second.run()

    sent = model.calls[0].messages
    assert sent[0] == Message("system", "You investigate.")
    assert sent[1:-1] == resumed.messages
    assert [m.content for m in sent if m.role == "tool"] == [first.toolbox.output] * 2
    assert sent[-1] == Message("user", prompts.RESUMED)
    assert [u.seq for u in second.sent(Utterance)] == [3]
    # Two earlier replies and one now use up three steps: the next call is for the report.
    assert "step limit reached (3 steps)" in model.calls[1].messages[-1].content
    assert report.outcome == "cut_short"
    # The transcript holds each message once: the picked-up part is not written again.
    users = [e.content for e in second.entries() if e.event == "message" and e.role == "user"]
    assert users.count("Start investigating your angle now: invalidation paths") == 1
    assert users.count(prompts.RESUMED) == 1


async def test_a_bee_with_nothing_to_resume_starts_from_its_kickoff(tmp_path: Path) -> None:
    model = ScriptedModel([FIRST_REPORT])
    bee = Bee(tmp_path, model, resume=True)
    bee.loop = BeeLoop(bee.brief, model=model, toolbox=bee.toolbox, channel=bee.channel, transcript=bee.transcript,
                       system_prompt="You investigate.", clock=bee.clock, resumed=resume_conversation([]))
    report = await bee.run()
    assert report.outcome == "reported"
    assert model.calls[0].messages[-1] == Message("user", prompts.kickoff(bee.brief))


async def test_a_model_error_after_a_resume_is_still_a_report(tmp_path: Path) -> None:
    model = ScriptedModel([ModelAPIError("provider down")])
    bee = Bee(tmp_path, model, resume=True)
    bee.loop = BeeLoop(bee.brief, model=model, toolbox=bee.toolbox, channel=bee.channel,
                       transcript=bee.transcript, system_prompt="You investigate.", clock=bee.clock,
                       resumed=resume_conversation([reply("Started reading.")]))
    report = await bee.run()
    assert report.outcome == "failed" and "provider down" in (report.reason or "")
