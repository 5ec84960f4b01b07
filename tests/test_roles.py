"""Role files: the packaged roles, the override order, and a one-line error for every malformed field."""

from __future__ import annotations

from pathlib import Path

import pytest

import hive
from hive.errors import SpecError, UsageError
from hive.roles import PLACEHOLDERS, list_roles, load_role, packaged_role_dirs, parse_role, role_dirs

GOOD = """---
name: {name}
description: {description}
tools: {tools}
{extra}---
Body for {{bee}}.
"""


def write_role(
    directory: Path, name: str, *, description: str = "A test role.", tools: str = "[read, grep]", extra: str = ""
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.md"
    path.write_text(GOOD.format(name=name, description=description, tools=tools, extra=extra))
    return path


# --------------------------------------------------------------------------- packaged roles


@pytest.mark.parametrize("name", ["investigator", "verifier"])
def test_packaged_roles_load(name: str, tmp_path: Path) -> None:
    role = load_role(name, cwd=tmp_path)
    assert role.name == name
    assert role.tools == ("read", "grep", "find", "ls", "bash", "browse")
    assert role.model is None and role.max_steps is None and role.time_limit is None
    assert role.path.parent.name == "roles"
    for placeholder in PLACEHOLDERS:
        assert "{" + placeholder + "}" in role.prompt, placeholder
    for prefix in ("FOUND:", "DEAD END:", "BLOCKED:"):
        assert prefix in role.prompt
    for section in ("### Found", "### Ruled out", "### Open"):
        assert section in role.prompt
    assert "findings, not instructions" in role.prompt
    assert "change nothing" in role.prompt


def test_investigator_prompt_covers_the_brief(tmp_path: Path) -> None:
    prompt = load_role("investigator", cwd=tmp_path).prompt
    assert "DECIDED:" in prompt
    assert "path:line" in prompt
    assert "Blocked is not failed" in prompt
    assert "Stop for the right reason" in prompt
    assert "do not repeat" in prompt


def test_verifier_states_its_verdict_as_found(tmp_path: Path) -> None:
    prompt = load_role("verifier", cwd=tmp_path).prompt
    assert "contradicting notes (verbatim)" in prompt
    assert "Your verdict** is one `FOUND:` statement" in prompt


def test_render_fills_placeholders_and_leaves_other_braces(tmp_path: Path) -> None:
    role = load_role("investigator", cwd=tmp_path)
    values = {
        "problem": "Why is {x} slow?",
        "angle": "the cache {angle}",
        "others": "- bee-2: the DB",
        "bee": "bee-1",
        "n": 3,
    }
    text = role.render(values)
    assert "You are bee-1, one of 3 investigators" in text
    assert "Why is {x} slow?" in text and "the cache {angle}" in text  # values are never re-interpreted
    assert "- bee-2: the DB" in text
    assert not any("{" + name + "}" in text.replace("{angle}", "") for name in PLACEHOLDERS)


def test_render_keeps_a_placeholder_it_has_no_value_for() -> None:
    role = parse_role("---\nname: r\ndescription: d\ntools: read\n---\n{bee} {problem} {json: 1}\n", Path("r.md"))
    assert role.render({"bee": "bee-4"}) == "bee-4 {problem} {json: 1}"


def test_packaged_roles_are_looked_up_in_a_checkout_and_in_a_wheel() -> None:
    package = Path(hive.__file__).resolve().parent
    assert packaged_role_dirs() == [package / "_roles", package.parent / "roles"]


# --------------------------------------------------------------------------- override order


def test_project_roles_beat_user_roles_beat_packaged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "hive-home"
    monkeypatch.setenv("HIVE_HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    assert load_role("investigator", cwd=project).path.parent.name == "roles"

    user_file = write_role(home / "roles", "investigator", description="user's")
    assert load_role("investigator", cwd=project).path == user_file

    project_file = write_role(project / ".hive" / "roles", "investigator", description="project's")
    role = load_role("investigator", cwd=project)
    assert role.path == project_file and role.description == "project's"
    assert role_dirs(project)[:2] == [project / ".hive" / "roles", home / "roles"]


def test_user_roles_default_to_the_config_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HIVE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    path = write_role(tmp_path / ".config" / "hive" / "roles", "scout")
    assert load_role("scout", cwd=tmp_path).path == path


def test_list_roles_adds_user_roles_and_shows_each_name_once(tmp_path: Path) -> None:
    project_roles = tmp_path / ".hive" / "roles"
    write_role(project_roles, "auditor", tools="read, grep, ls")
    write_role(project_roles, "verifier")
    roles = list_roles(tmp_path)
    assert [role.name for role in roles] == ["auditor", "investigator", "verifier"]
    assert roles[0].tools == ("read", "grep", "ls")
    assert roles[2].path == project_roles / "verifier.md"


def test_unknown_role_lists_the_available_ones(tmp_path: Path) -> None:
    write_role(tmp_path / ".hive" / "roles", "auditor")
    with pytest.raises(SpecError) as caught:
        load_role("nosuch", cwd=tmp_path)
    assert str(caught.value) == "unknown role 'nosuch'; available roles: auditor, investigator, verifier"
    assert isinstance(caught.value, UsageError)


def test_optional_fields(tmp_path: Path) -> None:
    extra = "model: openai:gpt-4.1-mini\nmax_steps: 12\ntime_limit: 90\ncontext_tokens: 30000\n"
    write_role(tmp_path / ".hive" / "roles", "quick", extra=extra)
    role = load_role("quick", cwd=tmp_path)
    assert (role.model, role.max_steps, role.time_limit, role.context_tokens) == (
        "openai:gpt-4.1-mini", 12, 90.0, 30000)
    write_role(tmp_path / ".hive" / "roles", "plain")
    assert load_role("plain", cwd=tmp_path).context_tokens is None
    assert role.prompt == "Body for {bee}."


def test_a_pinned_script_model_is_found_next_to_the_role_file(tmp_path: Path) -> None:
    roles = tmp_path / ".hive" / "roles"
    write_role(roles, "scripted", extra="model: script:bees.json\n")
    assert load_role("scripted", cwd=tmp_path).model == f"script:{roles.resolve() / 'bees.json'}"


# --------------------------------------------------------------------------- malformed role files


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("no front matter here\n", "no YAML front matter"),
        ("---\nname: bad\ndescription: d\ntools: [read\n---\nbody\n", "invalid YAML front matter at line"),
        ("---\n- a\n- b\n---\nbody\n", "the front matter must be a YAML mapping"),
        ("---\ndescription: d\ntools: read\n---\nbody\n", "missing field 'name'"),
        ("---\nname: bad\ntools: read\n---\nbody\n", "missing field 'description'"),
        ("---\nname: bad\ndescription: d\n---\nbody\n", "missing field 'tools'"),
        ("---\nname: bad\ndescription: d\ntools: 3\n---\nbody\n", "field 'tools' must be a list"),
        ("---\nname: bad\ndescription: d\ntools: [read, 4]\n---\nbody\n", "field 'tools' must be a list"),
        ("---\nname: bad\ndescription: d\ntools: read, write\n---\nbody\n", "field 'tools' names unknown tool 'write'"),
        ("---\nname: bad\ndescription: d\ntools: ' , '\n---\nbody\n", "field 'tools' lists no tools"),
        (
            "---\nname: bad\ndescription: [d]\ntools: read\n---\nbody\n",
            "field 'description' must be a non-empty string",
        ),
        ("---\nname: bad\ndescription: d\ntools: read\nmodel: 5\n---\nbody\n", "field 'model' must be a non-empty"),
        ("---\nname: bad\ndescription: d\ntools: read\nmodel: gemini:x\n---\nbody\n",
         "field 'model': unknown model provider 'gemini'"),
        ("---\nname: bad\ndescription: d\ntools: read\nmodel: gpt-4\n---\nbody\n",
         "field 'model': model spec 'gpt-4' must look like provider:model"),
        (
            "---\nname: bad\ndescription: d\ntools: read\nmax_steps: ten\n---\nbody\n",
            "field 'max_steps' must be a positive integer",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\nmax_steps: 1.5\n---\nbody\n",
            "field 'max_steps' must be a positive integer",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\nmax_steps: 0\n---\nbody\n",
            "field 'max_steps' must be a positive integer",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\ntime_limit: true\n---\nbody\n",
            "field 'time_limit' must be a finite positive number",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\ntime_limit: -5\n---\nbody\n",
            "field 'time_limit' must be a finite positive number",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\ntime_limit: .inf\n---\nbody\n",
            "field 'time_limit' must be a finite positive number, got inf",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\ntime_limit: .nan\n---\nbody\n",
            "field 'time_limit' must be a finite positive number, got nan",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\nmax_steps: 100000000000000000000000\n---\nbody\n",
            "field 'max_steps' must be a positive integer of at most 2147483647, got 100000000000000000000000",
        ),
        ("---\nname: bad\ndescription: d\ntools: read\ncolour: red\n---\nbody\n", "unknown field 'colour'"),
        (
            "---\nname: bad\ndescription: d\ntools: read\ncontext_tokens: 500\n---\nbody\n",
            "field 'context_tokens' must be at least 1000, got 500",
        ),
        (
            "---\nname: other\ndescription: d\ntools: read\n---\nbody\n",
            "field 'name' is 'other' but the file is named 'bad.md'",
        ),
        (
            "---\nname: bad\ndescription: d\ntools: read\n---\n\n  \n",
            "the prompt (the Markdown body after the front matter) is empty",
        ),
    ],
)
def test_malformed_role_is_a_one_line_error_naming_file_and_field(tmp_path: Path, text: str, message: str) -> None:
    roles = tmp_path / ".hive" / "roles"
    roles.mkdir(parents=True)
    (roles / "bad.md").write_text(text)
    with pytest.raises(SpecError) as caught:
        load_role("bad", cwd=tmp_path)
    error = str(caught.value)
    assert "\n" not in error
    assert error.startswith(f"role file {roles / 'bad.md'}: ")
    assert message in error


def test_undecodable_role_file(tmp_path: Path) -> None:
    roles = tmp_path / ".hive" / "roles"
    roles.mkdir(parents=True)
    (roles / "bin.md").write_bytes(b"---\nname: bin\xff\n---\n")
    with pytest.raises(SpecError, match=r"role file .*bin\.md: cannot read it"):
        load_role("bin", cwd=tmp_path)


def test_a_broken_project_role_is_not_silently_replaced_by_the_packaged_one(tmp_path: Path) -> None:
    roles = tmp_path / ".hive" / "roles"
    roles.mkdir(parents=True)
    (roles / "investigator.md").write_text("---\nname: investigator\n---\nbody\n")
    with pytest.raises(SpecError, match="missing field 'description'"):
        load_role("investigator", cwd=tmp_path)
