"""Role files: Markdown with a YAML front matter, the system prompt as the body.

    ---
    name: investigator
    description: Investigates one angle of a problem without changing anything.
    tools: read, grep, find, ls, bash, browse      # or a YAML list
    model: openai:gpt-4.1-mini                     # optional: pins the bee's model
    max_steps: 40                                  # optional
    time_limit: 600                                # optional, seconds
    context_tokens: 30000                          # optional: keep the conversation under this (see hive.bee.context)
    ---
    You are {bee}, one of {n} investigators ...

A role named ``x`` is looked up as ``x.md`` in, first to last: ``<cwd>/.hive/roles/``, the user's roles
(``$HIVE_HOME/roles/`` when ``HIVE_HOME`` is set, else ``~/.config/hive/roles/``), and the roles that ship
with hive (``roles/`` in a checkout, ``hive/_roles/`` in an installed wheel). The first found wins, so users
override or add roles. The body may use the placeholders in :data:`PLACEHOLDERS`; :meth:`Role.render` fills
them in, leaving every other brace alone.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # pyyaml ships no stubs; types-PyYAML is not a dependency

from hive.config import hive_home
from hive.errors import SpecError
from hive.tools.registry import ALL_TOOLS

PLACEHOLDERS: dict[str, str] = {
    "problem": "the problem the hive works on, as the user wrote it",
    "angle": "this bee's angle (for a verifier: the two contradicting notes, verbatim)",
    "others": "the other bees and their angles, one per line (`- bee-2: <angle>`), or `(none)`",
    "bee": "this bee's id, e.g. `bee-1`",
    "n": "how many investigators work on the problem",
}
"""Placeholders a role's prompt may use, written ``{name}``."""

_FIELDS = ("name", "description", "tools", "model", "max_steps", "time_limit", "context_tokens")
MIN_CONTEXT_TOKENS = 1_000
"""Less than this holds no more than the system prompt and the task."""
_REQUIRED = ("name", "description", "tools")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL)
_Refusal = Callable[[str], SpecError]
_PLACEHOLDER = re.compile(r"\{(" + "|".join(PLACEHOLDERS) + r")\}")


@dataclass(frozen=True)
class Role:
    """A parsed role file."""

    name: str
    description: str
    tools: tuple[str, ...]
    model: str | None
    """A model spec that pins the bee's model (``provider:model``; a ``script:`` path is resolved against the
    role file's directory), or None to use the run's. It is also the run's model when ``--model`` is not given."""
    max_steps: int | None
    time_limit: float | None
    """Seconds."""
    context_tokens: int | None
    """About how many tokens the bee's conversation may take before old tool results are elided; ``None``
    for the default (:class:`~hive.records.BeeBrief`'s)."""
    prompt: str
    """The Markdown body: the bee's system prompt, with placeholders not yet filled in."""
    path: Path

    def render(self, values: Mapping[str, object]) -> str:
        """The prompt with ``{problem}``, ``{angle}``, ``{others}``, ``{bee}`` and ``{n}`` filled in.

        Only those names are replaced (a placeholder missing from ``values`` stays as written), so braces
        elsewhere in the prompt, or inside the inserted values, are never interpreted.
        """
        return _PLACEHOLDER.sub(lambda m: str(values[m[1]]) if m[1] in values else m[0], self.prompt)


def packaged_role_dirs() -> list[Path]:
    """Where hive's own roles live: ``hive/_roles`` in a wheel, ``roles/`` in a checkout."""
    package = Path(__file__).resolve().parent
    return [package / "_roles", package.parent / "roles"]


def user_role_dir() -> Path:
    return hive_home() / "roles"


def role_dirs(cwd: Path | None = None) -> list[Path]:
    """The directories searched for roles, highest priority first."""
    return [(cwd or Path.cwd()) / ".hive" / "roles", user_role_dir(), *packaged_role_dirs()]


def _role_files(cwd: Path | None) -> dict[str, Path]:
    """Each role name and the file that wins for it."""
    found: dict[str, Path] = {}
    for directory in role_dirs(cwd):
        if directory.is_dir():
            for path in sorted(directory.glob("*.md")):
                found.setdefault(path.stem, path)
    return found


def load_role(name: str, *, cwd: Path | None = None) -> Role:
    """The role called ``name``, from the first directory of :func:`role_dirs` that has it."""
    files = _role_files(cwd)
    path = files.get(name)
    if path is None:
        available = ", ".join(sorted(files)) or "none"
        raise SpecError(f"unknown role {name!r}; available roles: {available}")
    return parse_role_file(path)


def list_roles(cwd: Path | None = None) -> list[Role]:
    """Every role visible from ``cwd``, by name; user roles hide packaged roles of the same name."""
    return [parse_role_file(path) for _, path in sorted(_role_files(cwd).items())]


def parse_role_file(path: Path) -> Role:
    """Read and check one role file; any problem is a one-line :class:`SpecError` naming file and field."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"role file {path}: cannot read it ({e})") from None
    return parse_role(text, path)


def parse_role(text: str, path: Path) -> Role:
    """Parse a role file's text (``path`` names it in errors and becomes :attr:`Role.path`)."""

    def bad(problem: str) -> SpecError:
        return SpecError(f"role file {path}: {problem}")

    match = _FRONT_MATTER.match(text.lstrip("\ufeff"))
    if match is None:
        raise bad("no YAML front matter (the file must start with a line `---` and close it with another)")
    try:
        meta = yaml.safe_load(match[1])
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        problem = getattr(e, "problem", None) or type(e).__name__
        raise bad(f"invalid YAML front matter{where}: {problem}") from None
    if not isinstance(meta, dict):
        raise bad("the front matter must be a YAML mapping of fields")
    unknown = [str(key) for key in meta if key not in _FIELDS]
    if unknown:
        raise bad(f"unknown field {', '.join(map(repr, unknown))}; fields are: {', '.join(_FIELDS)}")
    for field_name in _REQUIRED:
        if meta.get(field_name) in (None, ""):
            raise bad(f"missing field {field_name!r}")
    name = _text(meta, "name", bad)
    if name != path.stem:
        raise bad(f"field 'name' is {name!r} but the file is named {path.name!r}; they must match")
    prompt = match[2].strip()
    if not prompt:
        raise bad("the prompt (the Markdown body after the front matter) is empty")
    return Role(
        name=name,
        description=_text(meta, "description", bad),
        tools=_tools(meta["tools"], bad),
        model=_model(meta, path, bad) if meta.get("model") is not None else None,
        max_steps=_positive(meta, "max_steps", int, bad),
        time_limit=_positive(meta, "time_limit", float, bad),
        context_tokens=_context_tokens(meta, bad),
        prompt=prompt,
        path=path,
    )


def _model(meta: dict[str, Any], path: Path, bad: _Refusal) -> str:
    from hive.providers.registry import parse_model_spec, resolve_spec

    spec = _text(meta, "model", bad)
    try:
        parse_model_spec(spec)
    except SpecError as e:
        raise bad(f"field 'model': {e}") from None
    return resolve_spec(spec, cwd=path.parent)  # a script: file is found next to the role file


def _text(meta: dict[str, Any], field_name: str, bad: _Refusal) -> str:
    value = meta[field_name]
    if not isinstance(value, str) or not value.strip():
        raise bad(f"field {field_name!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _tools(value: object, bad: _Refusal) -> tuple[str, ...]:
    if isinstance(value, str):
        names = [part.strip() for part in value.split(",")]
    elif isinstance(value, list) and all(isinstance(item, str) for item in value):
        names = [item.strip() for item in value]
    else:
        raise bad(f"field 'tools' must be a list of tool names or a comma-separated string, got {value!r}")
    names = [name for name in names if name]
    if not names:
        raise bad("field 'tools' lists no tools")
    unknown = [name for name in names if name not in ALL_TOOLS]
    if unknown:
        listed = ", ".join(map(repr, unknown))
        raise bad(f"field 'tools' names unknown tool {listed}; hive's tools are: {', '.join(ALL_TOOLS)}")
    return tuple(dict.fromkeys(names))


MAX_COUNT = 2**31 - 1
"""The largest ``max_steps`` a role may give: far beyond any run, and still a number every record can hold."""


def _context_tokens(meta: dict[str, Any], bad: _Refusal) -> int | None:
    tokens: int | None = _positive(meta, "context_tokens", int, bad)
    if tokens is not None and tokens < MIN_CONTEXT_TOKENS:
        raise bad(f"field 'context_tokens' must be at least {MIN_CONTEXT_TOKENS}, got {tokens}")
    return tokens


def _positive(meta: dict[str, Any], field_name: str, kind: type[int] | type[float], bad: _Refusal) -> Any:
    value = meta.get(field_name)
    if value is None:
        return None
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if kind is int:
        ok = ok and isinstance(value, int) and value <= MAX_COUNT
    # YAML's .inf and .nan are floats: neither is a time limit.
    if not ok or not 0 < value < math.inf:
        wanted = f"a positive integer of at most {MAX_COUNT}" if kind is int else "a finite positive number"
        raise bad(f"field {field_name!r} must be {wanted}, got {value!r:.40}")
    return kind(value)
