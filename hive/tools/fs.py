"""``read``, ``grep``, ``find``, ``ls``: the file tools, confined to the repository root.

Every path argument goes through :meth:`RepoRoot.resolve`: ``..`` that leaves the root, absolute paths
outside it, and symlinks whose target lies outside it are refused before any file is opened, and the tool
then opens the *resolved* path, so what was checked is what is read. File work runs in a worker thread
(``asyncio.to_thread``) and is bounded in bytes, lines and entries, so a huge repository cannot stall the
bee's event loop or its memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from hive.providers.base import ToolSpec
from hive.tools.base import ToolResult
from hive.tools.common import (
    OUTPUT_CAP,
    ToolError,
    cap_output,
    char_boundary,
    check_args,
    decode,
    glob_matches,
    preview,
    truncation_marker,
)
from hive.wording import plural

SNIFF_BYTES = 8192
"""How much of a file is looked at to decide whether it is binary (a NUL byte means binary, as git does)."""
LONG_LINE = 2000
"""Characters of one line shown by read and grep; the rest of that line is elided."""
READ_LIMIT = 2000
"""Lines read returns when the model does not say."""
SEARCH_SECONDS = 30.0
"""A grep or find that takes longer stops and reports what it has."""
MAX_ENTRIES = 1000
"""Entries ls and find list at most."""

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x7fELF", "ELF executable or library"),
    (b"\x89PNG", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF8", "GIF image"),
    (b"%PDF", "PDF document"),
    (b"PK\x03\x04", "zip archive (also jar, wheel, docx)"),
    (b"\x1f\x8b", "gzip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xca\xfe\xba\xbe", "Java class or Mach-O universal binary"),
    (b"\x00asm", "WebAssembly module"),
)


def describe_binary(head: bytes) -> str:
    """A name for a binary file's kind from its first bytes, or a generic one."""
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    return "binary data"


def is_binary(head: bytes) -> bool:
    return b"\x00" in head


# --------------------------------------------------------------------------- confinement


class RepoRoot:
    """The repository root the file tools are confined to; the only way they turn arguments into paths.

    ``excluded`` are directories inside the root that are not part of the repository under investigation:
    hive's own runs directory, when a run writes there (``hive start --repo .`` with the default ``./runs``).
    The bees' transcripts, the board and the gate log must not reach a bee through its tools: its searches
    would find their own earlier results, and it would read notes the gates withheld from it.
    """

    def __init__(self, root: Path, excluded: Sequence[Path] = ()) -> None:
        self.given = Path(os.path.abspath(root))
        self.path = root.resolve(strict=True)
        self.excluded = tuple(
            dict.fromkeys(
                real for real in (path.resolve() for path in excluded) if real != self.path and _within(real, self.path)
            )
        )

    def resolve(self, raw: str, *, tool: str) -> Path:
        """The real path ``raw`` names, or :class:`ToolError` when it would leave the repository."""
        text = raw.strip() or "."
        candidate = Path(text)
        if candidate.is_absolute():
            # Accept the root spelled as given (it may itself sit behind a symlink) as well as resolved.
            for base in (self.given, self.path):
                if _within(Path(os.path.normpath(candidate)), base):
                    candidate = self.path / Path(os.path.normpath(candidate)).relative_to(base)
                    break
            else:
                raise ToolError(
                    f"{tool}: refused: {preview(text, 200)} is outside the repository ({self.path}); "
                    "use a path relative to the repository root",
                    activity=f"{tool} {preview(text)}: refused (outside the repository)",
                )
        lexical = Path(os.path.normpath(self.path / candidate))
        if not _within(lexical, self.path):
            raise ToolError(
                f"{tool}: refused: {preview(text, 200)} leaves the repository root through '..'",
                activity=f"{tool} {preview(text)}: refused (outside the repository)",
            )
        try:
            resolved = lexical.resolve()
        except (RuntimeError, OSError):  # a symlink loop (RuntimeError before Python 3.13)
            raise ToolError(
                f"{tool}: cannot resolve {preview(text, 200)}: a symlink loop or an invalid path",
                activity=f"{tool} {preview(text)}: failed (symlink loop)",
            ) from None
        if not _within(resolved, self.path):
            raise ToolError(
                f"{tool}: refused: {preview(text, 200)} is a symlink (or lies under one) "
                "resolving outside the repository",
                activity=f"{tool} {preview(text)}: refused (symlink out of the repository)",
            )
        if self.is_excluded(resolved):
            raise ToolError(
                f"{tool}: refused: {preview(text, 200)} is in hive's own runs directory, which is not part of "
                "the repository under investigation; notes from the other investigators reach you as messages",
                activity=f"{tool} {preview(text)}: refused (hive's runs directory)",
            )
        return resolved

    def is_excluded(self, path: Path) -> bool:
        """Whether ``path`` (resolved, or a path found by walking the root) is in an excluded directory."""
        return any(_within(path, excluded) for excluded in self.excluded)

    def exclusion_globs(self) -> list[str]:
        """ripgrep ``--glob`` options leaving the excluded directories out (anchored at the root)."""
        return [f"--glob=!/{glob_escape(self.display(path))}" for path in self.excluded]

    def display(self, path: Path) -> str:
        """``path`` relative to the root, with ``/`` separators; ``.`` for the root itself."""
        return path.relative_to(self.path).as_posix() if path != self.path else "."

    def link_target(self, path: Path) -> Literal["inside", "outside", "loop"]:
        """Where a symlink found while listing leads: inside the root, outside it, or round in a loop."""
        try:
            return "inside" if _within(path.resolve(), self.path) else "outside"
        except (RuntimeError, OSError):
            return "loop"


def _within(path: Path, root: Path) -> bool:
    return path == root or path.is_relative_to(root)


def glob_escape(text: str) -> str:
    """``text`` as a glob that matches only itself (ripgrep's globs take ``\\`` escapes)."""
    return re.sub(r"([*?\[\]{}!\\])", r"\\\1", text)


def _stat_or_refuse(path: Path, raw: str, tool: str) -> os.stat_result:
    shown = preview(raw, 200)
    try:
        return path.stat()
    except FileNotFoundError:
        raise ToolError(
            f"{tool}: no such file or directory: {shown}", activity=f"{tool} {preview(raw)}: not found"
        ) from None
    except OSError as e:
        raise ToolError(
            f"{tool}: cannot open {shown}: {e.strerror}", activity=f"{tool} {preview(raw)}: failed"
        ) from None


# --------------------------------------------------------------------------- walking


@dataclass(frozen=True)
class IgnoreRules:
    """The root ``.gitignore``, for the pure-Python walk when ripgrep is absent.

    A subset of git's rules: blank lines and ``#`` comments skipped, ``!`` negations not supported, a trailing
    ``/`` limits a pattern to directories, a ``/`` elsewhere anchors it to the root, otherwise it matches the
    name at any depth. ``.git`` itself is always skipped.
    """

    patterns: tuple[tuple[str, bool], ...] = ()

    @classmethod
    def load(cls, root: Path) -> IgnoreRules:
        try:
            text = (root / ".gitignore").read_text(encoding="utf-8", errors="replace")
        except OSError:
            return cls()
        rules = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith(("#", "!")):
                continue
            dir_only = line.endswith("/")
            rules.append((line.rstrip("/"), dir_only))
        return cls(tuple(rules))

    def ignored(self, relative: str, *, is_dir: bool) -> bool:
        if relative == ".git" or relative.endswith("/.git"):
            return True
        return any(glob_matches(pattern, relative) for pattern, dir_only in self.patterns if is_dir or not dir_only)


def walk_files(root: RepoRoot, top: Path, rules: IgnoreRules, deadline: float) -> Iterator[Path]:
    """Regular files under ``top`` in ripgrep's ``--sort path`` order, skipping ignored entries and symlinks
    (ripgrep does not follow links either). Stops quietly at ``deadline`` (a ``time.monotonic`` value)."""
    try:
        entries = sorted(os.scandir(top), key=lambda entry: entry.name)
    except OSError:
        return
    for entry in entries:
        if time.monotonic() > deadline:
            return
        if entry.is_symlink():
            continue
        path = Path(entry.path)
        is_dir = entry.is_dir(follow_symlinks=False)
        if root.is_excluded(path) or rules.ignored(root.display(path), is_dir=is_dir):
            continue
        if is_dir:
            yield from walk_files(root, path, rules, deadline)
        elif entry.is_file(follow_symlinks=False):
            yield path


def iter_lines(stream: IO[bytes], keep: int) -> Iterator[tuple[bytes, bool]]:
    """Lines of a binary stream without their newline, each cut to ``keep`` bytes (the flag says it was cut).

    Memory stays bounded on a file that is one enormous line.
    """
    while True:
        line = stream.readline(keep + 1)
        if not line:
            return
        if line.endswith(b"\n"):
            yield line[:-1].removesuffix(b"\r"), False
            continue
        if len(line) <= keep:  # the last line, with no newline at the end
            yield line.removesuffix(b"\r"), False
            return
        while (rest := stream.readline(1 << 16)) and not rest.endswith(b"\n"):
            pass
        yield line[:keep], True


def _long_line(text: str, cut: bool) -> str:
    if cut or len(text) > LONG_LINE:
        return text[:LONG_LINE] + " [... omitted end of long line]"
    return text


# --------------------------------------------------------------------------- read


READ_SPEC = ToolSpec(
    name="read",
    description=(
        "Read a text file of the repository, with line numbers. Paths are relative to the repository root. "
        f"Returns at most `limit` lines (default {READ_LIMIT}) from line `offset` (1-based, default 1); "
        "long output is truncated with a marker that says how to continue."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path relative to the repository root."},
            "offset": {
                "type": "integer",
                "minimum": 1,
                "default": 1,
                "description": "First line to show (1-based).",
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "default": READ_LIMIT,
                "description": "How many lines.",
            },
        },
        "required": ["path"],
        "additionalProperties": False,
    },
)


class ReadTool:
    """Read part of one text file; binary files are described, not dumped."""

    spec = READ_SPEC

    def __init__(self, root: RepoRoot, *, cap: int = OUTPUT_CAP) -> None:
        self.root = root
        self.cap = cap

    async def run(self, args: dict[str, Any]) -> ToolResult:
        try:
            checked = check_args("read", self.spec.parameters, args)
            path = self.root.resolve(checked["path"], tool="read")
            return await asyncio.to_thread(self._read, path, checked["offset"], checked["limit"])
        except ToolError as e:
            return e.result()

    def _read(self, path: Path, offset: int, limit: int) -> ToolResult:
        shown = self.root.display(path)
        info = _stat_or_refuse(path, shown, "read")
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"read: {shown} is a directory; use ls", activity=f"read {shown}: a directory")
        if not stat.S_ISREG(info.st_mode):
            # A FIFO or device would block or never end.
            raise ToolError(f"read: {shown} is not a regular file", activity=f"read {shown}: not a regular file")
        with path.open("rb") as stream:
            head = stream.read(SNIFF_BYTES)
            if is_binary(head):
                return ToolResult(
                    text=f"{shown}: binary file ({describe_binary(head)}), {info.st_size} bytes; not shown.",
                    activity=f"read {shown}: binary, {info.st_size} bytes",
                )
            stream.seek(0)
            return self._lines(stream, shown, info.st_size, offset, limit)

    def _lines(self, stream: IO[bytes], shown: str, size: int, offset: int, limit: int) -> ToolResult:
        activity = f"read {shown}" if offset == 1 else f"read {shown} from line {offset}"
        out: list[str] = []
        used = 0
        line_start = first_shown = 0  # file positions, for the byte count in the truncation marker
        number = 0
        for number, (raw, cut) in enumerate(iter_lines(stream, LONG_LINE * 4), start=1):
            line_end = stream.tell()
            if number < offset:
                line_start = first_shown = line_end
                continue
            if number >= offset + limit:
                out.append(f"[showing lines {offset}-{number - 1}; the file continues: read with offset={number}]")
                return ToolResult(text="\n".join(out), activity=activity)
            prefix = f"{number:>6}\t"
            line = (prefix + _long_line(decode(raw), cut)).encode()
            if used + len(line) + 1 > self.cap:
                room = char_boundary(line, self.cap - used)
                out.append(decode(line[:room]))
                shown_bytes = line_start - first_shown + max(0, room - len(prefix))
                out.append(truncation_marker(shown_bytes, size))
                out.append(f"[continue with offset={number}]")
                return ToolResult(text="\n".join(out), activity=activity)
            out.append(decode(line))
            used += len(line) + 1
            line_start = line_end
        if number == 0:
            return ToolResult(text=f"{shown}: empty file", activity=activity)
        if number < offset:
            raise ToolError(
                f"read: offset {offset} is past the end of {shown} ({plural(number, 'line')})",
                activity=f"read {shown}: offset past the end",
            )
        return ToolResult(text="\n".join(out), activity=activity)


# --------------------------------------------------------------------------- grep


GREP_SPEC = ToolSpec(
    name="grep",
    description=(
        "Search file contents with a regular expression. Prints matching lines as `path:line:text`. "
        "Searches the repository (or `path` under it), skipping binary files, .git and what .gitignore "
        "ignores; `glob` limits the files searched (e.g. `*.py` or `src/**/*.ts`)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "Regular expression (Rust/Python syntax)."},
            "path": {"type": "string", "default": ".", "description": "File or directory to search."},
            "glob": {"type": "string", "description": "Only search files whose path matches this glob."},
            "ignore_case": {"type": "boolean", "default": False, "description": "Case-insensitive match."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


@dataclass
class _Collected:
    """Output lines up to a byte cap, and how many lines and bytes there were in all."""

    cap: int
    kept: bytearray
    lines: int = 0
    total: int = 0

    def add(self, line: bytes) -> None:
        self.lines += 1
        self.total += len(line) + 1
        if len(self.kept) <= self.cap:
            self.kept += line + b"\n"

    def text(self) -> str:
        return cap_output(bytes(self.kept), self.cap, total=self.total).rstrip("\n")


def find_ripgrep(rg_path: str | None) -> str | None:
    """The ripgrep executable to use, or ``None`` to use the Python fallback."""
    return shutil.which(rg_path) if rg_path else None


class GrepTool:
    """Regex search of the repository: ripgrep when present, else a pure-Python walk, same output."""

    spec = GREP_SPEC

    def __init__(
        self,
        root: RepoRoot,
        *,
        rg_path: str | None = "rg",
        cap: int = OUTPUT_CAP,
        seconds: float = SEARCH_SECONDS,
    ) -> None:
        self.root = root
        self.cap = cap
        self.seconds = seconds
        self.rg = find_ripgrep(rg_path)

    async def run(self, args: dict[str, Any]) -> ToolResult:
        try:
            checked = check_args("grep", self.spec.parameters, args)
            pattern: str = checked["pattern"]
            target = self.root.resolve(checked["path"], tool="grep")
            mode = _stat_or_refuse(target, checked["path"], "grep").st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                # A FIFO or device named outright would block the search until its time runs out.
                shown = self.root.display(target)
                raise ToolError(f"grep: {shown} is not a regular file or a directory",
                                activity=f"searched {shown}: not a regular file")
            flags = re.IGNORECASE if checked["ignore_case"] else 0
            try:
                re.compile(pattern, flags)
            except re.error as e:
                if self.rg is None:
                    raise ToolError(
                        f"grep: invalid regular expression {pattern!r}: {e}",
                        activity=f"searched for `{preview(pattern)}`: invalid pattern",
                    ) from None
                # ripgrep's syntax differs a little from Python's; let it judge.
            if self.rg is not None:
                found, stopped = await self._ripgrep(pattern, target, checked["glob"], checked["ignore_case"])
            else:
                found, stopped = await self._python(pattern, target, checked["glob"], checked["ignore_case"])
        except ToolError as e:
            return e.result()
        activity = f"searched for `{preview(pattern)}`: {plural(found.lines, 'hit')}"
        text = found.text() if found.lines else "no matches"
        if stopped:
            text += f"\n[search stopped after {self.seconds:g} s; results are partial]"
        return ToolResult(text=text, activity=activity)

    def _relative_target(self, target: Path) -> list[str]:
        shown = self.root.display(target)
        return [] if shown == "." else ["--", shown]

    async def _ripgrep(
        self, pattern: str, target: Path, glob: str | None, ignore_case: bool
    ) -> tuple[_Collected, bool]:
        assert self.rg is not None
        argv = [
            self.rg,
            "--line-number",
            "--with-filename",
            "--no-heading",
            "--color=never",
            "--sort=path",
            "--hidden",
            "--no-require-git",
            "--no-messages",
            "--no-config",
            f"--max-columns={LONG_LINE}",
            "--max-columns-preview",
        ]
        if ignore_case:
            argv.append("--ignore-case")
        if glob:
            argv.append(f"--glob={glob}")
        # After the model's glob: of several matching globs ripgrep obeys the last, so `**` cannot bring them back.
        argv += ["--glob=!.git", *self.root.exclusion_globs()]
        argv += ["--regexp", pattern, *self._relative_target(target)]
        collected = _Collected(self.cap, bytearray())
        code, stderr, stopped = await _run_lines(argv, self.root.path, collected.add, self.seconds)
        message = decode(stderr).strip()
        # Exit 2 is an error; with no hits and nothing but "No files were searched" (everything was skipped or
        # unreadable) it is just no matches. A bad regex or glob is the model's to fix.
        if code == 2 and not collected.lines and message and not message.startswith("No files were searched"):
            raise ToolError(f"grep: {message}", activity=f"searched for `{preview(pattern)}`: failed")
        return collected, stopped

    async def _python(
        self, pattern: str, target: Path, glob: str | None, ignore_case: bool
    ) -> tuple[_Collected, bool]:
        """The pure-Python search, in a process of its own (:mod:`hive.tools.pygrep`), killed at the time limit.

        Not in a thread of the bee: a model's pattern can backtrack for hours (``(a+)+$`` on a line of a's), and
        Python's ``re`` holds the GIL while it does, which would freeze the bee's event loop, its limits and its
        answers to the coordinator. ``-P``: the working directory is the repository, whose files must not stand
        in for a module the search imports.
        """
        argv = [sys.executable, "-P", "-m", "hive.tools.pygrep", "--root", str(self.root.path),
                "--seconds", str(self.seconds)]
        argv += [f"--exclude={path}" for path in self.root.excluded]
        if glob:
            argv.append(f"--glob={glob}")
        if ignore_case:
            argv.append("--ignore-case")
        argv += ["--", pattern, str(target)]
        collected = _Collected(self.cap, bytearray())
        # A second past the search's own deadline, at which it stops by itself and says so (exit 3).
        code, stderr, stopped = await _run_lines(argv, self.root.path, collected.add, self.seconds + 1)
        if code not in (None, 0, PARTIAL_EXIT):
            problem = decode(stderr).strip().splitlines()[-1:] or [f"exit {code}"]
            raise ToolError(f"grep failed: {problem[0]}", activity=f"searched for `{preview(pattern)}`: failed")
        return collected, stopped or code == PARTIAL_EXIT


PARTIAL_EXIT = 3
"""The exit status of :mod:`hive.tools.pygrep` when it stopped at its deadline with partial results."""


def search_file(regex: re.Pattern[str], path: Path, shown: str, emit: Callable[[bytes], object]) -> None:
    """Emit ``path:line:text`` for each line of the text file ``path`` that ``regex`` matches (binary files and
    unreadable ones are skipped, as ripgrep does)."""
    try:
        with path.open("rb") as stream:
            if is_binary(stream.read(SNIFF_BYTES)):
                return
            stream.seek(0)
            for number, (raw, cut) in enumerate(iter_lines(stream, LONG_LINE * 4), start=1):
                text = decode(raw)
                if regex.search(text):
                    emit(f"{shown}:{number}:{_long_line(text, cut)}".encode("utf-8", "surrogateescape"))
    except OSError:
        return


async def _run_lines(argv: list[str], cwd: Path, on_line: Any, seconds: float) -> tuple[int | None, bytes, bool]:
    """Run a helper program (ripgrep), feeding each stdout line to ``on_line``; kill it after ``seconds``.

    Returns (exit code or None when stopped, stderr's first bytes, whether it was stopped).
    """
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        limit=1 << 20,
    )
    assert proc.stdout is not None and proc.stderr is not None
    stopped = False
    stderr = b""
    try:
        async with asyncio.timeout(seconds):
            while raw := await proc.stdout.readline():
                on_line(raw.rstrip(b"\n"))
            stderr = await proc.stderr.read(4096)
            await proc.wait()
    except TimeoutError:
        stopped = True
    except ValueError:  # a line longer than the stream limit; --max-columns makes this all but impossible
        stopped = True
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    return (None if stopped else proc.returncode), stderr, stopped


# --------------------------------------------------------------------------- find


FIND_SPEC = ToolSpec(
    name="find",
    description=(
        "Find files by glob, e.g. `*.py` (a name at any depth), `tests/**/test_*.py` (a path from the search "
        "root). Skips .git and what .gitignore ignores. Lists paths relative to the repository root."
    ),
    parameters={
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "Glob: `*`, `?`, `[abc]`, and `**` across directories.",
            },
            "path": {"type": "string", "default": ".", "description": "Directory to search under."},
        },
        "required": ["pattern"],
        "additionalProperties": False,
    },
)


class FindTool:
    """List files whose path matches a glob: ``rg --files`` when ripgrep is present, else the Python walk."""

    spec = FIND_SPEC

    def __init__(
        self,
        root: RepoRoot,
        *,
        rg_path: str | None = "rg",
        cap: int = OUTPUT_CAP,
        seconds: float = SEARCH_SECONDS,
        max_entries: int = MAX_ENTRIES,
    ) -> None:
        self.root = root
        self.cap = cap
        self.seconds = seconds
        self.max_entries = max_entries
        self.rg = find_ripgrep(rg_path)

    async def run(self, args: dict[str, Any]) -> ToolResult:
        try:
            checked = check_args("find", self.spec.parameters, args)
            pattern: str = checked["pattern"]
            top = self.root.resolve(checked["path"], tool="find")
            info = _stat_or_refuse(top, checked["path"], "find")
            if not stat.S_ISDIR(info.st_mode):
                raise ToolError(
                    f"find: {checked['path']} is not a directory",
                    activity=f"find in {checked['path']}: not a directory",
                )
            base = self.root.display(top)
            matches: list[str] = []

            def consider(relative: str) -> None:
                below = relative if base == "." else relative.removeprefix(base + "/")
                if glob_matches(pattern, below):
                    matches.append(relative)

            if self.rg is not None:
                argv = [
                    self.rg,
                    "--files",
                    "--sort=path",
                    "--hidden",
                    "--glob=!.git",
                    *self.root.exclusion_globs(),
                    "--no-require-git",
                    "--no-messages",
                    "--no-config",
                    *([] if base == "." else ["--", base]),
                ]
                _, _, stopped = await _run_lines(argv, self.root.path, lambda raw: consider(decode(raw)), self.seconds)
            else:
                stopped = await asyncio.to_thread(self._python, top, consider)
        except ToolError as e:
            return e.result()
        noun = "file" if len(matches) == 1 else "files"
        activity = f"found {len(matches)} {noun} matching `{preview(pattern)}`"
        if not matches:
            return ToolResult(text=f"no files match {pattern!r}", activity=activity)
        listing = "\n".join(matches[: self.max_entries])
        text = cap_output(listing.encode("utf-8", "surrogateescape"), self.cap)
        if len(matches) > self.max_entries:
            text += f"\n[showing the first {self.max_entries} of {len(matches)} matches]"
        if stopped:
            text += f"\n[search stopped after {self.seconds:g} s; results are partial]"
        return ToolResult(text=text, activity=activity)

    def _python(self, top: Path, consider: Any) -> bool:
        deadline = time.monotonic() + self.seconds
        for path in walk_files(self.root, top, IgnoreRules.load(self.root.path), deadline):
            consider(self.root.display(path))
        return time.monotonic() > deadline


# --------------------------------------------------------------------------- ls


LS_SPEC = ToolSpec(
    name="ls",
    description=(
        "List a directory of the repository: `name/` for directories, `name  (N bytes)` for files, "
        "`name -> target` for symlinks. Hidden entries included."
    ),
    parameters={
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "default": ".",
                "description": "Directory relative to the repository root.",
            },
        },
        "required": [],
        "additionalProperties": False,
    },
)


class LsTool:
    """List one directory (or describe one file)."""

    spec = LS_SPEC

    def __init__(self, root: RepoRoot, *, cap: int = OUTPUT_CAP, max_entries: int = MAX_ENTRIES) -> None:
        self.root = root
        self.cap = cap
        self.max_entries = max_entries

    async def run(self, args: dict[str, Any]) -> ToolResult:
        try:
            checked = check_args("ls", self.spec.parameters, args)
            path = self.root.resolve(checked["path"], tool="ls")
            return await asyncio.to_thread(self._list, path, checked["path"])
        except ToolError as e:
            return e.result()

    def _list(self, path: Path, raw: str) -> ToolResult:
        info = _stat_or_refuse(path, raw, "ls")
        shown = self.root.display(path)
        label = "./" if shown == "." else shown + "/"
        if not stat.S_ISDIR(info.st_mode):
            return ToolResult(text=f"{shown}  ({info.st_size} bytes)", activity=f"listed {shown}")
        try:
            entries = sorted(os.scandir(path), key=lambda entry: entry.name)
        except OSError as e:
            raise ToolError(f"ls: cannot list {shown}: {e.strerror}", activity=f"listed {label}: failed") from None
        lines = [self._entry(entry) for entry in entries[: self.max_entries]]
        if not lines:
            return ToolResult(text=f"{label} is empty", activity=f"listed {label}")
        text = cap_output("\n".join(lines).encode("utf-8", "surrogateescape"), self.cap)
        if len(entries) > self.max_entries:
            text += f"\n[showing the first {self.max_entries} of {len(entries)} entries]"
        return ToolResult(text=text, activity=f"listed {label}")

    def _entry(self, entry: os.DirEntry[str]) -> str:
        if self.root.is_excluded(Path(entry.path)):
            return f"{entry.name}/  (hive's runs directory; not part of the investigation)"
        if entry.is_symlink():
            try:
                target = os.readlink(entry.path)
            except OSError:
                target = "?"
            where = {
                "inside": "",
                "outside": "  (outside the repository; not followed)",
                "loop": "  (a symlink loop; not followed)",
            }[self.root.link_target(Path(entry.path))]
            return f"{entry.name} -> {target}{where}"
        if entry.is_dir(follow_symlinks=False):
            return entry.name + "/"
        try:
            size = entry.stat(follow_symlinks=False).st_size
        except OSError:
            return entry.name
        return f"{entry.name}  ({size} bytes)"
