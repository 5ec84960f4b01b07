"""The script:<file> model: turns per bee, delays, the planner and answer agents, and invalid files."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hive.errors import SpecError
from hive.providers.base import Message, ToolCall
from hive.providers.registry import check_model_spec, infer_model
from hive.providers.script import SCRIPT_ENDED

SCRIPT: dict[str, Any] = {
    "angles": ["the board fold", "the store's append path"],
    "bees": {
        "bee-1": [
            {"say": "Looking at the fold first.", "tools": [{"name": "grep", "args": {"pattern": "def fold"}}]},
            {"tools": [{"name": "read", "args": {"path": "hive/board.py"}}, {"name": "ls"}]},
            {"say": "## Found\n- fold drops superseded notes (hive/board.py:88)"},
        ],
        "bee-2": [{"say": "DEAD END: the store is fine.", "delay": 0.01}],
        "verify-1": [{"say": "Confirmed."}],
    },
    "answer": "The fold drops notes.",
}


def write(tmp_path: Path, content: Any, name: str = "script.json") -> Path:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


async def test_a_resumed_conversation_goes_on_with_the_turn_after_its_last_reply(tmp_path: Path) -> None:
    model = infer_model(f"script:{write(tmp_path, SCRIPT)}", agent="bee-1", env={})
    earlier = ToolCall("call-bee-1-1", "grep", {"pattern": "def fold"})
    conversation = [
        Message("system", "You are bee-1."),
        Message("user", "Start."),
        Message("assistant", "Looking at the fold first.", tool_calls=(earlier,)),
        Message("tool", "hive/board.py:88: def fold(", tool_call_id=earlier.id, name="grep"),
        Message("user", "The run was stopped and has now been resumed."),
    ]
    second = await model.request(conversation)
    assert [c.id for c in second.tool_calls] == ["call-bee-1-2", "call-bee-1-3"]
    # From then on the model counts its own turns, whatever the conversation holds.
    assert (await model.request(conversation)).text.startswith("## Found")
    assert (await model.request(conversation)).text == SCRIPT_ENDED


async def test_a_bee_gets_its_turns_in_order_then_script_ended(tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPT)
    model = infer_model(f"script:{path}", agent="bee-1", env={})
    conversation = [Message("system", "You are bee-1."), Message("user", "x" * 400)]

    first = await model.request(conversation)
    assert first.text == "Looking at the fold first."
    assert first.tool_calls == (ToolCall("call-bee-1-1", "grep", {"pattern": "def fold"}),)
    assert first.usage.input_tokens == (len("You are bee-1.") + 400) // 4
    assert first.usage.output_tokens > 0
    assert first.usage.cost_usd is None
    assert first.model == f"script:{path}"

    second = await model.request(conversation)
    assert second.text == ""
    assert second.tool_calls == (
        ToolCall("call-bee-1-2", "read", {"path": "hive/board.py"}),
        ToolCall("call-bee-1-3", "ls", {}),
    )

    report = await model.request(conversation)
    assert report.text.startswith("## Found")
    assert report.tool_calls == ()

    for _ in range(2):
        ended = await model.request(conversation)
        assert (ended.text, ended.tool_calls) == (SCRIPT_ENDED, ())
    await model.aclose()


async def test_each_model_instance_keeps_its_own_place(tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPT)
    first_process = infer_model(f"script:{path}", agent="bee-1", env={})
    second_process = infer_model(f"script:{path}", agent="bee-1", env={})
    await first_process.request([])
    again = await second_process.request([])
    assert again.text == "Looking at the fold first."


async def test_bees_and_verifiers_follow_their_own_lists(tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPT)
    assert (await infer_model(f"script:{path}", agent="bee-2", env={}).request([])).text.startswith("DEAD END")
    assert (await infer_model(f"script:{path}", agent="verify-1", env={}).request([])).text == "Confirmed."
    assert (await infer_model(f"script:{path}", agent="bee-7", env={}).request([])).text == SCRIPT_ENDED


async def test_delay_is_awaited_and_cancellable(tmp_path: Path) -> None:
    path = write(tmp_path, {"bees": {"bee-1": [{"say": "slow", "delay": 30}]}})
    model = infer_model(f"script:{path}", agent="bee-1", env={})
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await model.request([])


async def test_planner_gets_the_angles_as_a_json_list_and_answer_the_answer(tmp_path: Path) -> None:
    path = write(tmp_path, SCRIPT)
    planner = infer_model(f"script:{path}", agent="planner", env={})
    for _ in range(2):  # the plan does not run out
        assert json.loads((await planner.request([Message("user", "Give 2 angles as a JSON list")])).text) == [
            "the board fold",
            "the store's append path",
        ]
    answer = infer_model(f"script:{path}", agent="answer", env={})
    assert (await answer.request([])).text == "The fold drops notes."


async def test_every_field_is_optional(tmp_path: Path) -> None:
    path = write(tmp_path, {"bees": {"bee-1": [{}]}})
    assert json.loads((await infer_model(f"script:{path}", agent="planner", env={}).request([])).text) == []
    assert (await infer_model(f"script:{path}", agent="answer", env={}).request([])).text == ""
    assert (await infer_model(f"script:{path}", agent="bee-1", env={}).request([])).text == ""
    check_model_spec(f"script:{write(tmp_path, {}, 'empty.json')}", env={})


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes: line 1 column 2"),
        ("[]", "top level: input should be a valid dictionary"),
        ({"bees": {"bee-1": [{"say": "x", "tool": []}]}}, "bees.bee-1[0].tool: unknown field"),
        ({"bees": {"bee-1": [{"say": 3}]}}, "bees.bee-1[0].say: input should be a valid string"),
        ({"bees": {"bee-1": [{"delay": -1}]}}, "bees.bee-1[0].delay: input should be greater than or equal to 0"),
        ({"bees": {"bee-1": [{"delay": True}]}}, "bees.bee-1[0].delay: input should be a valid number"),
        ({"bees": {"bee-1": [{"delay": 1e308}]}}, "bees.bee-1[0].delay: input should be less than or equal to 86400"),
        ({"bees": {"bee-1": [{"tools": [{"args": {}}]}]}}, "bees.bee-1[0].tools[0].name: field required"),
        ({"bees": {"bee-1": [{"tools": [{"name": "grep", "args": "x"}]}]}}, "tools[0].args: input should be a valid"),
        ({"bees": {"bee-1": {"say": "x"}}}, "bees.bee-1: input should be a valid list"),
        ({"angles": "one", "answer": 1}, "angles: input should be a valid list (and 1 more problem)"),
        ({"bee": {}}, "bee: unknown field"),
    ],
)
def test_invalid_files_are_one_line_spec_errors_naming_file_and_problem(
    tmp_path: Path, content: Any, problem: str
) -> None:
    path = write(tmp_path, content)
    with pytest.raises(SpecError) as caught:
        check_model_spec(f"script:{path}", env={})
    message = str(caught.value)
    assert message.startswith(f"script file {str(path)!r}: ")
    assert problem in message
    assert "\n" not in message


def test_a_file_that_is_not_text_is_a_spec_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.json"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(SpecError, match="cannot be read"):
        check_model_spec(f"script:{path}", env={})
    with pytest.raises(SpecError, match="cannot be read"):
        check_model_spec(f"script:{tmp_path}", env={})
