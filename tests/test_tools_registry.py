"""The toolbox: only the role's tools, refusals as results, never an exception for what a model sends."""

from __future__ import annotations

import math
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from hive.errors import UsageError
from hive.tools.common import check_args
from hive.tools.registry import ALL_TOOLS, Toolbox


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / "a.py").write_text("x = 1\n")
    return tmp_path


def test_all_tools_are_read_only_by_name() -> None:
    assert ALL_TOOLS == ("read", "grep", "find", "ls", "bash", "browse")
    assert not {"write", "edit", "patch", "apply_patch", "create", "delete"} & set(ALL_TOOLS)


def test_specs_list_only_the_allowed_tools(repo: Path) -> None:
    toolbox = Toolbox(repo, ["read", "grep"])
    specs = toolbox.specs()
    assert [spec.name for spec in specs] == ["read", "grep"]
    for spec in specs:
        assert spec.parameters["type"] == "object"
        assert spec.parameters["additionalProperties"] is False
        assert set(spec.parameters["required"]) <= set(spec.parameters["properties"])
        assert spec.description


def test_every_tool_has_a_spec(repo: Path) -> None:
    assert [spec.name for spec in Toolbox(repo, ALL_TOOLS).specs()] == list(ALL_TOOLS)


async def test_a_tool_outside_the_role_is_refused_whatever_the_arguments(repo: Path) -> None:
    toolbox = Toolbox(repo, ["read", "grep"])
    marker = repo / "bash-ran"
    result = await toolbox.call("bash", {"command": f"touch {marker}"})
    assert not result.ok
    assert result.text == (
        "refused: tool 'bash' is not allowed for this role; allowed tools: read, grep. There is no write or edit tool."
    )
    assert result.activity == "bash: refused (not in this role's tools)"
    assert not marker.exists()


@pytest.mark.parametrize("name", ["write", "edit", "Read", "", "read; rm -rf /", "x" * 500])
async def test_unknown_tools_are_refused(repo: Path, name: str) -> None:
    result = await Toolbox(repo, ALL_TOOLS).call(name, {"path": "a.py"})
    assert not result.ok
    assert result.text.startswith("refused: unknown tool ")
    assert "allowed tools: read, grep, find, ls, bash, browse" in result.text
    assert result.activity.endswith(": refused (not in this role's tools)")
    assert len(result.activity) < 100


@pytest.mark.parametrize(
    ("name", "args", "message"),
    [
        ("read", {}, "missing required argument 'path'"),
        ("read", {"path": None}, "missing required argument 'path'"),
        ("read", {"path": 7}, "'path' must be a string, got 7"),
        ("read", {"path": "a.py", "limit": "10"}, "'limit' must be an integer, got '10'"),
        ("read", {"path": "a.py", "limit": True}, "'limit' must be an integer, got True"),
        ("read", {"path": "a.py", "offset": 0}, "'offset' must be at least 1, got 0"),
        ("read", {"path": "a.py", "mode": "w"}, "unknown argument 'mode'"),
        ("read", {"path": "a\x00.py"}, "'path' contains a NUL byte"),
        ("read", ["a.py"], "arguments must be a JSON object, got list"),
        ("grep", {"pattern": "x", "ignore_case": "yes"}, "'ignore_case' must be true or false"),
        ("ls", "src", "arguments must be a JSON object, got str"),
        ("bash", {"command": "true", "timeout": "soon"}, "'timeout' must be a finite number"),
        ("bash", {"command": "true", "timeout": math.nan}, "'timeout' must be a finite number, got nan"),
        ("bash", {"command": "true", "timeout": math.inf}, "'timeout' must be a finite number, got inf"),
        ("browse", {}, "missing required argument 'url'"),
    ],
)
async def test_bad_arguments_are_error_results_not_exceptions(repo: Path, name: str, args: Any, message: str) -> None:
    result = await Toolbox(repo, ALL_TOOLS).call(name, args)
    assert not result.ok
    assert message in result.text
    assert result.text.startswith(f"{name}: ") and "(arguments: " in result.text
    assert result.activity == f"{name}: bad arguments"


def test_check_args_fills_defaults() -> None:
    schema = {
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer", "default": 5}},
        "required": ["path"],
    }
    assert check_args("t", schema, {"path": "x"}) == {"path": "x", "limit": 5}


async def test_a_failing_tool_becomes_an_error_result(repo: Path) -> None:
    # A path whose name is too long for the filesystem makes the OS raise inside the tool.
    result = await Toolbox(repo, ["read"]).call("read", {"path": "x" * 5000})
    assert not result.ok
    assert result.text.startswith("read")


async def test_a_file_name_that_is_not_utf8_never_reaches_a_result_as_a_lone_surrogate(repo: Path) -> None:
    # Python gives such a name as a str with lone surrogates, which no record can hold: reached through a link, it
    # crashed the bee at its transcript.
    os.close(os.open(bytes(repo) + b"/\xff.txt", os.O_CREAT | os.O_WRONLY))
    (repo / "link.txt").symlink_to(os.fsdecode(b"\xff.txt"))
    toolbox = Toolbox(repo, ["read", "ls"])
    for name in ("read", "ls"):
        result = await toolbox.call(name, {"path": "link.txt"})
        assert "\ufffd.txt" in result.text and "\ufffd.txt" in result.activity
        orjson.dumps([result.text, result.activity])  # raised "surrogates not allowed" before


def test_unknown_tool_in_the_allowed_list_is_a_usage_error(repo: Path) -> None:
    with pytest.raises(UsageError, match="unknown tool write, edit; hive's tools are: read, grep"):
        Toolbox(repo, ["read", "write", "edit"])


def test_repository_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="is not a directory"):
        Toolbox(tmp_path / "missing", ["read"])


async def test_closed_toolbox_refuses_calls(repo: Path) -> None:
    toolbox = Toolbox(repo, ["read"])
    assert (await toolbox.call("read", {"path": "a.py"})).ok
    await toolbox.aclose()
    result = await toolbox.call("read", {"path": "a.py"})
    assert not result.ok
    assert "tools are closed" in result.text and "final report" in result.text


@pytest.mark.parametrize(
    "rg_path",
    [pytest.param("rg", marks=pytest.mark.skipif(shutil.which("rg") is None, reason="ripgrep missing")), None],
)
async def test_activity_lines(repo: Path, rg_path: str | None) -> None:
    toolbox = Toolbox(repo, ["read", "grep", "find", "ls"], rg_path=rg_path)
    assert (await toolbox.call("read", {"path": "a.py"})).activity == "read a.py"
    assert (await toolbox.call("grep", {"pattern": "x ="})).activity == "searched for `x =`: 1 hit"
    assert (await toolbox.call("find", {"pattern": "*.py"})).activity == "found 1 file matching `*.py`"
    assert (await toolbox.call("ls", {})).activity == "listed ./"
