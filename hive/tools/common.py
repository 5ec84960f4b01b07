"""Pieces every tool shares: argument checking, output capping, one-line activity text, glob matching.

All pure functions; the tools call them from their I/O edges.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from hive.tools.base import ToolResult

OUTPUT_CAP = 20_000
"""Bytes of tool output a model sees at most, per call."""

_PREVIEW_CHARS = 60


class ToolError(Exception):
    """A refusal or a failure the model should read: becomes an ``ok=False`` result, never a crash."""

    def __init__(self, message: str, *, activity: str) -> None:
        super().__init__(message)
        self.activity = activity

    def result(self) -> ToolResult:
        return ToolResult(text=str(self), ok=False, activity=self.activity)


def check_args(tool: str, schema: dict[str, Any], args: object) -> dict[str, Any]:
    """Validate ``args`` against the small JSON-schema subset our tool specs use; fill in defaults.

    Raises :class:`ToolError` with a message that tells the model how to call the tool correctly.
    """
    properties: dict[str, dict[str, Any]] = schema["properties"]
    usage = ", ".join(properties)

    def refuse(problem: str) -> ToolError:
        return ToolError(f"{tool}: {problem} (arguments: {usage})", activity=f"{tool}: bad arguments")

    if not isinstance(args, dict):
        raise refuse(f"arguments must be a JSON object, got {type(args).__name__}")
    unknown = sorted(set(args) - set(properties))
    if unknown:
        raise refuse("unknown argument " + ", ".join(repr(name) for name in unknown))
    missing = [name for name in schema.get("required", ()) if args.get(name) is None]
    if missing:
        raise refuse("missing required argument " + ", ".join(repr(name) for name in missing))
    checked: dict[str, Any] = {}
    for name, prop in properties.items():
        value = args.get(name)
        if value is None:
            checked[name] = prop.get("default")
            continue
        if not _has_type(value, prop["type"]):
            raise refuse(f"{name!r} must be {_TYPE_WORDS[prop['type']]}, got {value!r}"[:300])
        if "minimum" in prop and value < prop["minimum"]:
            raise refuse(f"{name!r} must be at least {prop['minimum']}, got {value!r}")
        if prop["type"] == "string" and "\x00" in value:
            raise refuse(f"{name!r} contains a NUL byte")
        checked[name] = value
    return checked


_TYPE_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
}


def _has_type(value: object, kind: str) -> bool:
    # bool is an int subclass in Python; JSON keeps them apart, so do we.
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    raise AssertionError(f"schema type {kind!r} is not supported")


def truncation_marker(shown: int, total: int) -> str:
    """The one marker every tool uses when it leaves output out."""
    return f"[truncated: showing {shown} of {total} bytes]"


def char_boundary(data: bytes, cut: int) -> int:
    """The largest index ``<= cut`` that does not split a UTF-8 character."""
    cut = min(cut, len(data))
    while 0 < cut < len(data) and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return cut


def decode(data: bytes) -> str:
    """Text for the model: UTF-8, undecodable bytes shown as U+FFFD rather than failing."""
    return data.decode("utf-8", errors="replace")


def cap_output(data: bytes, cap: int, *, total: int | None = None) -> str:
    """Decode ``data``; if it (or ``total``, when the caller already dropped bytes) exceeds ``cap``, cut it
    on a character boundary and end with the truncation marker."""
    total = len(data) if total is None else total
    if total <= cap and len(data) <= cap:
        return decode(data)
    cut = char_boundary(data, cap)
    head = decode(data[:cut])
    return f"{head}{'' if head.endswith(chr(10)) else chr(10)}{truncation_marker(cut, total)}"


def preview(text: str, limit: int = _PREVIEW_CHARS) -> str:
    """One short line for an activity: the first line of ``text``, clipped with an ellipsis."""
    first, *rest = text.strip().splitlines() or [""]
    if len(first) > limit or rest:
        return first[: limit - 1].rstrip() + "…"
    return first


# --------------------------------------------------------------------------- globs


@lru_cache(maxsize=256)
def glob_regex(pattern: str) -> re.Pattern[str]:
    """Compile a glob over ``/``-separated relative paths.

    ``*`` and ``?`` stay inside one path segment, ``**`` spans any number of segments (a ``**/`` prefix may
    match none), ``[abc]`` is a character class. A pattern without ``/`` matches the file name at any depth;
    one with ``/`` matches the whole path from the search root.
    """
    body = pattern.strip().lstrip("/")
    anchored = "/" in body
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if body.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif body.startswith("**", i):
            out.append(".*")
            i += 2
        elif char == "*":
            out.append("[^/]*")
            i += 1
        elif char == "?":
            out.append("[^/]")
            i += 1
        elif char == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(char))
            i += 1
    prefix = "" if anchored else "(?:.*/)?"
    return re.compile(prefix + "".join(out) + r"\Z", re.DOTALL)


def glob_matches(pattern: str, relative_path: str) -> bool:
    return glob_regex(pattern).match(relative_path) is not None
