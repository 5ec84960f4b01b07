"""Pieces every tool shares: argument checking, output capping, one-line activity text, glob matching.

All pure functions; the tools call them from their I/O edges.
"""

from __future__ import annotations

import math
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
    "number": "a finite number",
    "boolean": "true or false",
}


def _has_type(value: object, kind: str) -> bool:
    # bool is an int subclass in Python; JSON keeps them apart, so do we.
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        # Python's JSON parser reads NaN and Infinity, which JSON itself does not have: neither is a number here.
        return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
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


_Token = tuple[str, str | re.Pattern[str] | None]
"""One piece of a glob: ``lit`` (a character), ``one`` (``?``), ``class`` (``[abc]``, a one-character regex),
``star`` (``*``: any run within a segment), ``all`` (``**``: any run at all), ``dirs`` (``**/``: nothing, or any
run ending with ``/``)."""
_WILDCARDS = frozenset({"star", "all", "dirs"})
_REGEX_WILDCARDS = 2
"""A glob with at most this many wildcards is matched by a regex (fast, and its backtracking stays quadratic at
worst); one with more by a lazily built automaton, linear in the path, which no pattern can make explode."""
_DFA_CACHE = 50_000
"""Transitions a lazy automaton keeps before it starts over (memory stays bounded for any pattern)."""


def _glob_tokens(pattern: str) -> tuple[tuple[_Token, ...], bool]:
    """The tokens of ``pattern`` and whether it is anchored (has a ``/``); runs of wildcards that match the same
    thing as one (``**/**/``, ``**`` next to ``*``) are collapsed into one."""
    body = pattern.strip().lstrip("/")
    tokens: list[_Token] = []
    i = 0
    while i < len(body):
        char = body[i]
        token: _Token
        if body.startswith("**/", i):
            token, i = ("dirs", None), i + 3
        elif body.startswith("**", i):
            token, i = ("all", None), i + 2
        elif char == "*":
            token, i = ("star", None), i + 1
        elif char == "?":
            token, i = ("one", None), i + 1
        elif char == "[" and (end := body.find("]", i + 2)) != -1:
            inner = body[i + 1 : end]
            if inner.startswith("!"):
                inner = "^" + inner[1:]
            token, i = ("class", re.compile("[" + inner.replace("\\", "\\\\") + "]", re.DOTALL)), end + 1
        else:
            token, i = ("lit", char), i + 1
        previous = tokens[-1][0] if tokens else None
        if token[0] == "dirs" and previous in ("dirs", "all"):
            continue
        if token[0] == "all" and previous == "dirs":
            tokens[-1] = token
            continue
        if token[0] in ("star", "all") and previous in ("star", "all"):
            tokens[-1] = ("all", None) if "all" in (token[0], previous) else tokens[-1]
            continue
        tokens.append(token)
    return tuple(tokens), "/" in body


class Glob:
    """A compiled glob over ``/``-separated relative paths.

    ``*`` and ``?`` stay inside one path segment, ``**`` spans any number of segments (a ``**/`` prefix may
    match none), ``[abc]`` is a character class. A pattern without ``/`` matches the file name at any depth;
    one with ``/`` matches the whole path from the search root. Matching never takes more than time linear in
    the path's length times the pattern's, whatever the pattern: a model writes it.
    """

    def __init__(self, pattern: str) -> None:
        tokens, anchored = _glob_tokens(pattern)
        self.tokens: tuple[_Token, ...] = tokens if anchored else (("dirs", None), *tokens)
        wildcards = sum(kind in _WILDCARDS for kind, _ in self.tokens)
        self._regex = self._as_regex() if wildcards <= _REGEX_WILDCARDS else None
        self._start = self._closure({(0, False)})
        self._transitions: dict[tuple[frozenset[tuple[int, bool]], str], frozenset[tuple[int, bool]]] = {}

    def matches(self, path: str) -> bool:
        if self._regex is not None:
            return self._regex.match(path) is not None
        if len(self._transitions) > _DFA_CACHE:
            self._transitions.clear()
        states = self._start
        for char in path:
            key = (states, char)
            following = self._transitions.get(key)
            if following is None:
                following = self._transitions[key] = self._step(states, char)
            if not following:
                return False
            states = following
        return (len(self.tokens), False) in states

    def _as_regex(self) -> re.Pattern[str]:
        pieces = {"star": "[^/]*", "all": ".*", "dirs": "(?:.*/)?", "one": "[^/]"}
        out = []
        for kind, value in self.tokens:
            if kind == "lit":
                assert isinstance(value, str)
                out.append(re.escape(value))
            elif kind == "class":
                assert isinstance(value, re.Pattern)
                out.append(value.pattern)
            else:
                out.append(pieces[kind])
        return re.compile("".join(out) + r"\Z", re.DOTALL)

    # The automaton's states are (token index, inside): before token i, or (for ``**/``) inside its run, which
    # must end with a ``/`` before token i + 1 can start.

    def _closure(self, states: set[tuple[int, bool]]) -> frozenset[tuple[int, bool]]:
        """``states`` and every state reachable from them without reading a character (skipping wildcards)."""
        reached = set(states)
        pending = [index for index, inside in states if not inside]
        while pending:
            index = pending.pop()
            if index < len(self.tokens) and self.tokens[index][0] in _WILDCARDS and (index + 1, False) not in reached:
                reached.add((index + 1, False))
                pending.append(index + 1)
        return frozenset(reached)

    def _step(self, states: frozenset[tuple[int, bool]], char: str) -> frozenset[tuple[int, bool]]:
        following: set[tuple[int, bool]] = set()
        for index, inside in states:
            if index == len(self.tokens):
                continue
            kind, value = self.tokens[index]
            if inside or kind == "dirs":
                following.add((index, True))
                if char == "/":
                    following.add((index + 1, False))
            elif kind == "star":
                if char != "/":
                    following.add((index, False))
            elif kind == "all":
                following.add((index, False))
            elif kind == "one":
                if char != "/":
                    following.add((index + 1, False))
            elif kind == "lit":
                if char == value:
                    following.add((index + 1, False))
            elif isinstance(value, re.Pattern) and value.match(char):
                following.add((index + 1, False))
        return self._closure(following)


@lru_cache(maxsize=256)
def compile_glob(pattern: str) -> Glob:
    return Glob(pattern)


def glob_matches(pattern: str, relative_path: str) -> bool:
    return compile_glob(pattern).matches(relative_path)
