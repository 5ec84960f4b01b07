"""read, grep, find, ls: confinement to the repository, odd files, truncation, ripgrep vs the Python fallback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from hive.tools.common import Glob, glob_matches
from hive.tools.fs import FindTool, GrepTool, LsTool, ReadTool, RepoRoot

HAS_RG = shutil.which("rg") is not None
needs_rg = pytest.mark.skipif(not HAS_RG, reason="ripgrep (rg) is not installed; scripts/setup.sh installs it")
# Both search back ends; the fallback is chosen by constructor parameter (rg_path=None), not by patching.
BACKENDS = [pytest.param("rg", marks=needs_rg, id="ripgrep"), pytest.param(None, id="python")]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the repository holding a secret the tools must never show."""
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("TOP-SECRET outside the repo\n")
    return directory


@pytest.fixture
def repo(tmp_path: Path, outside: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "pkg" / "core.py").write_text("import os\n\ndef batch_size():\n    return 32\n")
    (root / "src" / "pkg" / "util.py").write_text("BATCH_SIZE = 16\n# batch_size is read in core\n")
    (root / "src" / "app.js").write_text("const batch_size = 8;\n")
    (root / "README.md").write_text("# Demo\nbatch_size docs\n")
    (root / ".hidden.cfg").write_text("batch_size = 4\n")
    (root / ".gitignore").write_text("build/\n*.log\n")
    (root / "build").mkdir()
    (root / "build" / "gen.py").write_text("batch_size = 'generated'\n")
    (root / "debug.log").write_text("batch_size logged\n")
    (root / "image.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00batch_size" * 10)
    (root / "latin1.txt").write_bytes(b"caf\xe9 batch_size \xff\xfe\n")
    (root / "link_in.py").symlink_to(root / "src" / "pkg" / "core.py")
    (root / "escape.txt").symlink_to(outside / "secret.txt")
    (root / "escape_dir").symlink_to(outside, target_is_directory=True)
    return root


@pytest.fixture
def root(repo: Path) -> RepoRoot:
    return RepoRoot(repo)


# --------------------------------------------------------------------------- confinement refusals


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "../outside/secret.txt"}),
        ("read", {"path": "src/../../outside/secret.txt"}),
        ("read", {"path": "src/pkg/../../.."}),
        ("ls", {"path": ".."}),
        ("grep", {"pattern": "SECRET", "path": "../outside"}),
        ("find", {"pattern": "*.txt", "path": "../outside"}),
    ],
)
async def test_dotdot_traversal_is_refused(root: RepoRoot, tool: str, args: dict[str, str]) -> None:
    result = await _tool(tool, root).run(args)
    assert not result.ok
    assert "refused" in result.text and "'..'" in result.text
    assert "TOP-SECRET" not in result.text
    assert result.activity.endswith("refused (outside the repository)")


@pytest.mark.parametrize("tool", ["read", "ls", "grep", "find"])
async def test_absolute_path_outside_is_refused(root: RepoRoot, outside: Path, tool: str) -> None:
    args = {
        "read": {"path": str(outside / "secret.txt")},
        "ls": {"path": "/etc"},
        "grep": {"pattern": "root", "path": "/etc/passwd"},
        "find": {"pattern": "*", "path": str(outside)},
    }[tool]
    result = await _tool(tool, root).run(args)
    assert not result.ok
    assert "is outside the repository" in result.text
    assert "TOP-SECRET" not in result.text and "root:" not in result.text


async def test_absolute_path_inside_is_allowed(root: RepoRoot, repo: Path) -> None:
    result = await ReadTool(root).run({"path": str(repo / "src" / "pkg" / "core.py")})
    assert result.ok
    assert "def batch_size" in result.text
    assert result.activity == "read src/pkg/core.py"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("read", {"path": "escape.txt"}),
        ("read", {"path": "escape_dir/secret.txt"}),
        ("ls", {"path": "escape_dir"}),
        ("ls", {"path": "escape.txt"}),
        ("grep", {"pattern": "SECRET", "path": "escape_dir"}),
        ("grep", {"pattern": "SECRET", "path": "escape.txt"}),
        ("find", {"pattern": "*", "path": "escape_dir"}),
    ],
)
async def test_symlink_escape_is_refused(root: RepoRoot, tool: str, args: dict[str, str]) -> None:
    result = await _tool(tool, root).run(args)
    assert not result.ok
    assert "symlink" in result.text and "outside the repository" in result.text
    assert "TOP-SECRET" not in result.text


async def test_symlink_inside_the_repository_is_followed(root: RepoRoot) -> None:
    result = await ReadTool(root).run({"path": "link_in.py"})
    assert result.ok
    assert "def batch_size" in result.text


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_searching_the_whole_repository_never_follows_links_out(root: RepoRoot, rg_path: str | None) -> None:
    grep = await GrepTool(root, rg_path=rg_path).run({"pattern": "SECRET"})
    assert grep.ok and "TOP-SECRET" not in grep.text and grep.text == "no matches"
    found = await FindTool(root, rg_path=rg_path).run({"pattern": "*secret*"})
    assert found.ok and "secret.txt" not in found.text


async def test_ls_shows_an_escaping_symlink_without_following_it(root: RepoRoot) -> None:
    result = await LsTool(root).run({})
    assert result.ok
    assert "escape_dir -> " in result.text and "(outside the repository; not followed)" in result.text
    assert "link_in.py -> " in result.text
    assert "TOP-SECRET" not in result.text


# --------------------------------------------------------------------------- read


async def test_read_numbers_lines_and_pages_with_offset_and_limit(root: RepoRoot) -> None:
    tool = ReadTool(root)
    first = await tool.run({"path": "src/pkg/core.py", "limit": 2})
    assert first.text.splitlines() == [
        "     1\timport os",
        "     2\t",
        "[showing lines 1-2; the file continues: read with offset=3]",
    ]
    rest = await tool.run({"path": "src/pkg/core.py", "offset": 3})
    assert rest.text.splitlines() == ["     3\tdef batch_size():", "     4\t    return 32"]
    assert rest.activity == "read src/pkg/core.py from line 3"


async def test_read_offset_past_the_end(root: RepoRoot) -> None:
    result = await ReadTool(root).run({"path": "src/pkg/core.py", "offset": 50})
    assert not result.ok
    assert "past the end" in result.text and "4 lines" in result.text


async def test_read_describes_a_binary_file_instead_of_dumping_it(root: RepoRoot, repo: Path) -> None:
    result = await ReadTool(root).run({"path": "image.png"})
    assert result.ok
    size = (repo / "image.png").stat().st_size
    assert result.text == f"image.png: binary file (PNG image), {size} bytes; not shown."
    assert result.activity == f"read image.png: binary, {size} bytes"


async def test_read_decodes_non_utf8_bytes_with_replacement(root: RepoRoot) -> None:
    result = await ReadTool(root).run({"path": "latin1.txt"})
    assert result.ok
    assert result.text == "     1\tcaf\ufffd batch_size \ufffd\ufffd"


async def test_read_truncates_a_huge_file_with_a_marker_and_the_byte_count(root: RepoRoot, repo: Path) -> None:
    big = repo / "big.txt"
    big.write_text("".join(f"line {n} {'x' * 60}\n" for n in range(1, 50_001)))
    size = big.stat().st_size
    result = await ReadTool(root, cap=20_000).run({"path": "big.txt", "limit": 100_000})
    assert len(result.text.encode()) < 20_000 + 200
    lines = result.text.splitlines()
    marker, resume = lines[-2], lines[-1]
    assert marker.startswith("[truncated: showing ") and marker.endswith(f" of {size} bytes]")
    assert resume.startswith("[continue with offset=")
    next_line = int(resume.removeprefix("[continue with offset=").rstrip("]"))
    # The count is of file bytes: every line before next_line, plus what is shown of next_line itself.
    before = sum(len(f"line {n} {'x' * 60}\n") for n in range(1, next_line))
    assert before <= int(marker.split()[2]) < before + len(f"line {next_line} {'x' * 60}\n")
    assert f"line {next_line - 1} " in result.text
    following = await ReadTool(root).run({"path": "big.txt", "offset": next_line, "limit": 1})
    assert following.text.startswith(f"{next_line:>6}\tline {next_line} ")


async def test_read_bounds_one_enormous_line(root: RepoRoot, repo: Path) -> None:
    (repo / "minified.js").write_text("x" * 5_000_000 + "\nsecond\n")
    result = await ReadTool(root).run({"path": "minified.js"})
    assert result.ok
    assert "[... omitted end of long line]" in result.text
    assert result.text.splitlines()[-1] == "     2\tsecond"
    assert len(result.text) < 3000


async def test_read_empty_file_directory_and_missing_file(root: RepoRoot, repo: Path) -> None:
    (repo / "empty.txt").write_text("")
    tool = ReadTool(root)
    assert (await tool.run({"path": "empty.txt"})).text == "empty.txt: empty file"
    directory = await tool.run({"path": "src"})
    assert not directory.ok and "is a directory; use ls" in directory.text
    missing = await tool.run({"path": "nope.py"})
    assert not missing.ok and "no such file or directory: nope.py" in missing.text


async def test_read_refuses_a_fifo_instead_of_blocking(root: RepoRoot, repo: Path) -> None:
    os.mkfifo(repo / "pipe")
    result = await ReadTool(root).run({"path": "pipe"})
    assert not result.ok and "not a regular file" in result.text


# --------------------------------------------------------------------------- grep


EXPECTED_HITS = [
    ".hidden.cfg:1:batch_size = 4",
    "README.md:2:batch_size docs",
    "latin1.txt:1:caf\ufffd batch_size \ufffd\ufffd",
    "src/app.js:1:const batch_size = 8;",
    "src/pkg/core.py:3:def batch_size():",
    "src/pkg/util.py:2:# batch_size is read in core",
]


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_output_shape_and_ignores(root: RepoRoot, rg_path: str | None) -> None:
    result = await GrepTool(root, rg_path=rg_path).run({"pattern": "batch_size"})
    assert result.ok
    # Binary files, gitignored files (build/, *.log) and symlinks are skipped; hidden files are searched.
    assert result.text.splitlines() == EXPECTED_HITS
    assert result.activity == "searched for `batch_size`: 6 hits"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_refuses_a_fifo_and_skips_one_in_a_directory(
    root: RepoRoot, repo: Path, rg_path: str | None
) -> None:
    os.mkfifo(repo / "src" / "pipe")
    named = await GrepTool(root, rg_path=rg_path, seconds=5).run({"pattern": "batch", "path": "src/pipe"})
    assert not named.ok and "src/pipe is not a regular file or a directory" in named.text
    walked = await GrepTool(root, rg_path=rg_path, seconds=5).run({"pattern": "batch_size", "path": "src"})
    assert walked.ok and "stopped" not in walked.text and "src/pkg/core.py:3" in walked.text


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_path_glob_and_case(root: RepoRoot, rg_path: str | None) -> None:
    tool = GrepTool(root, rg_path=rg_path)
    in_dir = await tool.run({"pattern": "batch_size", "path": "src/pkg", "glob": "*.py"})
    assert in_dir.text.splitlines() == EXPECTED_HITS[4:]
    by_glob = await tool.run({"pattern": "batch", "glob": "*.js"})
    assert by_glob.text == "src/app.js:1:const batch_size = 8;"
    anchored = await tool.run({"pattern": "batch", "glob": "src/**/*.py"})
    assert anchored.text.splitlines() == EXPECTED_HITS[4:]
    cased = await tool.run({"pattern": "BATCH_SIZE", "path": "src/pkg/util.py", "ignore_case": True})
    assert cased.text.splitlines() == [
        "src/pkg/util.py:1:BATCH_SIZE = 16",
        "src/pkg/util.py:2:# batch_size is read in core",
    ]
    assert cased.activity == "searched for `BATCH_SIZE`: 2 hits"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_searches_an_explicit_ignored_file(root: RepoRoot, rg_path: str | None) -> None:
    result = await GrepTool(root, rg_path=rg_path).run({"pattern": "logged", "path": "debug.log"})
    assert result.text == "debug.log:1:batch_size logged"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_no_match_and_one_hit_wording(root: RepoRoot, rg_path: str | None) -> None:
    tool = GrepTool(root, rg_path=rg_path)
    none = await tool.run({"pattern": "no_such_identifier_anywhere"})
    assert none.ok and none.text == "no matches"
    assert none.activity == "searched for `no_such_identifier_anywhere`: 0 hits"
    one = await tool.run({"pattern": "const"})
    assert one.activity == "searched for `const`: 1 hit"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_invalid_regex_is_an_error_result(root: RepoRoot, rg_path: str | None) -> None:
    result = await GrepTool(root, rg_path=rg_path).run({"pattern": "foo(("})
    assert not result.ok
    assert "regex" in result.text.lower() or "regular expression" in result.text.lower()


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_truncates_many_hits(root: RepoRoot, repo: Path, rg_path: str | None) -> None:
    (repo / "many.txt").write_text("hit\n" * 5000)
    result = await GrepTool(root, rg_path=rg_path, cap=1000).run({"pattern": "^hit$", "path": "many.txt"})
    total = sum(len(f"many.txt:{n}:hit\n") for n in range(1, 5001))
    *shown, marker = result.text.split("\n")
    assert marker == f"[truncated: showing 1000 of {total} bytes]"
    assert shown[:2] == ["many.txt:1:hit", "many.txt:2:hit"]
    assert result.activity == "searched for `^hit$`: 5000 hits"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_clips_a_long_matching_line(root: RepoRoot, repo: Path, rg_path: str | None) -> None:
    (repo / "long.txt").write_text("needle" + "y" * 10_000 + "\n")
    result = await GrepTool(root, rg_path=rg_path).run({"pattern": "needle", "path": "long.txt"})
    assert result.text.startswith("long.txt:1:needle")
    assert result.text.endswith(" [... omitted end of long line]")
    assert len(result.text) < 2100


# --------------------------------------------------------------------------- find and ls


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_find_by_name_and_by_path(root: RepoRoot, rg_path: str | None) -> None:
    tool = FindTool(root, rg_path=rg_path)
    by_name = await tool.run({"pattern": "*.py"})
    assert by_name.text.splitlines() == ["src/pkg/core.py", "src/pkg/util.py"]
    assert by_name.activity == "found 2 files matching `*.py`"
    by_path = await tool.run({"pattern": "src/*.js"})
    assert by_path.text == "src/app.js" and by_path.activity == "found 1 file matching `src/*.js`"
    under = await tool.run({"pattern": "pkg/*.py", "path": "src"})
    assert under.text.splitlines() == ["src/pkg/core.py", "src/pkg/util.py"]
    hidden = await tool.run({"pattern": ".*"})
    assert hidden.text.splitlines() == [".gitignore", ".hidden.cfg"]
    none = await tool.run({"pattern": "*.rs"})
    assert none.text == "no files match '*.rs'" and none.activity == "found 0 files matching `*.rs`"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_find_caps_the_listing(root: RepoRoot, repo: Path, rg_path: str | None) -> None:
    many = repo / "many"
    many.mkdir()
    for n in range(30):
        (many / f"f{n:02}.txt").write_text("x")
    result = await FindTool(root, rg_path=rg_path, max_entries=10).run({"pattern": "many/*.txt"})
    assert result.text.splitlines()[-1] == "[showing the first 10 of 30 matches]"
    assert result.activity == "found 30 files matching `many/*.txt`"


async def test_find_refuses_a_file_as_the_search_root(root: RepoRoot) -> None:
    result = await FindTool(root).run({"pattern": "*", "path": "README.md"})
    assert not result.ok and "not a directory" in result.text


async def test_ls_lists_a_directory(root: RepoRoot, repo: Path) -> None:
    result = await LsTool(root).run({"path": "src"})
    size = (repo / "src" / "app.js").stat().st_size
    assert result.text.splitlines() == [f"app.js  ({size} bytes)", "pkg/"]
    assert result.activity == "listed src/"
    top = await LsTool(root).run({})
    assert top.activity == "listed ./"
    assert ".gitignore  (" in top.text and "build/" in top.text


async def test_ls_file_empty_directory_and_missing(root: RepoRoot, repo: Path) -> None:
    (repo / "empty").mkdir()
    tool = LsTool(root)
    size = (repo / "README.md").stat().st_size
    assert (await tool.run({"path": "README.md"})).text == f"README.md  ({size} bytes)"
    assert (await tool.run({"path": "empty"})).text == "empty/ is empty"
    missing = await tool.run({"path": "nope"})
    assert not missing.ok and "no such file or directory" in missing.text


# --------------------------------------------------------------------------- globs


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        ("*.py", "a.py", True),
        ("*.py", "deep/er/a.py", True),
        ("*.py", "a.pyc", False),
        ("src/*.py", "src/a.py", True),
        ("src/*.py", "src/x/a.py", False),
        ("src/**/*.py", "src/a.py", True),
        ("src/**/*.py", "src/x/y/a.py", True),
        ("**/test_*.py", "tests/test_a.py", True),
        ("test_?.py", "test_a.py", True),
        ("test_[ab].py", "test_c.py", False),
        ("test_[!ab].py", "test_c.py", True),
        ("/build", "build", True),
        ("build", "x/build", True),
        ("a+b(c).txt", "a+b(c).txt", True),
        ("*test*.py", "src/test_a.py", True),
        ("*test*.py", "test/a.py", False),
        ("**/**/b", "b", True),
        ("a/**/**/b", "a/x/y/b", True),
        ("a/**/**", "a/x/y", True),
        ("a**b", "a/x/b", True),
        ("**/x/**/y/**/*.py", "x/y/z.py", True),
        ("**/x/**/y/**/*.py", "x/z.py", False),
        ("a*b*c*d", "aXbYcZd", True),
        ("a*b*c*d", "aXbY/cZd", False),
    ],
)
def test_glob_matching(pattern: str, path: str, matches: bool) -> None:
    assert glob_matches(pattern, path) is matches
    # The regex and the automaton agree: patterns with many wildcards use the automaton.
    automaton = Glob(pattern)
    automaton._regex = None
    assert automaton.matches(path) is matches


@pytest.mark.parametrize("rg_path", BACKENDS)
@pytest.mark.parametrize("pattern", ["**/" * 30 + "zz", "*a" * 40 + "zz", "a*" * 30 + "/zz"])
async def test_a_pathological_glob_cannot_hang_the_bee(
    root: RepoRoot, repo: Path, rg_path: str | None, pattern: str
) -> None:
    # As a backtracking regex, each of these takes longer than the universe's age on one path; the first one
    # took 14 s with only 10 repetitions. find matches globs on the bee's event loop, so that was a hung bee.
    deep = repo / Path(*["a" * 40] * 20)
    deep.mkdir(parents=True)
    (deep / ("a" * 200)).write_text("batch_size\n")
    found = await FindTool(root, rg_path=rg_path).run({"pattern": pattern})
    assert found.text == f"no files match {pattern!r}"
    searched = await GrepTool(root, rg_path=rg_path).run({"pattern": "batch_size", "glob": pattern})
    assert searched.ok and searched.text == "no matches"


def _tool(name: str, root: RepoRoot) -> ReadTool | GrepTool | FindTool | LsTool:
    return {"read": ReadTool, "grep": GrepTool, "find": FindTool, "ls": LsTool}[name](root)


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_symlink_loops_are_reported_not_crashed_on(root: RepoRoot, repo: Path, rg_path: str | None) -> None:
    (repo / "loop_a").symlink_to(repo / "loop_b")
    (repo / "loop_b").symlink_to(repo / "loop_a")
    read = await ReadTool(root).run({"path": "loop_a/x"})
    assert not read.ok
    assert read.text == "read: cannot resolve loop_a/x: a symlink loop or an invalid path"
    assert read.activity == "read loop_a/x: failed (symlink loop)"
    listing = await LsTool(root).run({})
    assert "loop_a -> " in listing.text and "(a symlink loop; not followed)" in listing.text
    grep = await GrepTool(root, rg_path=rg_path).run({"pattern": "import os"})
    assert grep.text == "src/pkg/core.py:1:import os"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_grep_in_a_tree_with_nothing_searchable(tmp_path: Path, rg_path: str | None) -> None:
    (tmp_path / "only_link").symlink_to(tmp_path / "nowhere")
    result = await GrepTool(RepoRoot(tmp_path), rg_path=rg_path).run({"pattern": "x"})
    assert result.ok and result.text == "no matches"


async def test_a_very_long_path_is_clipped_in_messages(root: RepoRoot) -> None:
    result = await ReadTool(root).run({"path": "x" * 5000})
    assert not result.ok
    assert len(result.text) < 300 and len(result.activity) < 100


# --------------------------------------------------------------------------- hive's runs directory inside the repo


@pytest.fixture
def runs_root(repo: Path) -> RepoRoot:
    """The repository with hive's runs directory inside it (``hive start --repo .`` and the default ``./runs``),
    holding a transcript that mentions what the bee searches for."""
    bee_dir = repo / "out" / "runs" / "20260101-000000-abcd" / "bees" / "bee-1"
    bee_dir.mkdir(parents=True)
    (bee_dir / "transcript.jsonl").write_text('{"content": "src/pkg/core.py:3:def batch_size():"}\n')
    (repo / "out" / "runs" / "20260101-000000-abcd" / "board.jsonl").write_text('{"text": "batch_size withheld"}\n')
    (repo / "out" / "notes.md").write_text("batch_size in the project's own out/ directory\n")
    (repo / "runs_link").symlink_to(repo / "out" / "runs", target_is_directory=True)
    return RepoRoot(repo, [repo / "out" / "runs", repo.parent / "elsewhere", repo])


def test_only_directories_strictly_inside_the_root_are_excluded(runs_root: RepoRoot, repo: Path) -> None:
    assert runs_root.excluded == ((repo / "out" / "runs").resolve(),)


@pytest.mark.parametrize("rg_path", BACKENDS)
@pytest.mark.parametrize("glob", [None, "*", "**", "**/*.jsonl", "out/runs/**"])
async def test_grep_never_searches_the_runs_directory(runs_root: RepoRoot, rg_path: str | None,
                                                      glob: str | None) -> None:
    args = {"pattern": "batch_size", **({"glob": glob} if glob else {})}
    result = await GrepTool(runs_root, rg_path=rg_path).run(args)
    assert result.ok
    assert "out/runs" not in result.text and "withheld" not in result.text
    if glob in (None, "*", "**"):
        assert "out/notes.md:1:batch_size in the project's own out/ directory" in result.text.splitlines()
    in_out = await GrepTool(runs_root, rg_path=rg_path).run({"pattern": "batch_size", "path": "out"})
    assert in_out.text == "out/notes.md:1:batch_size in the project's own out/ directory"


@pytest.mark.parametrize("rg_path", BACKENDS)
async def test_find_never_lists_the_runs_directory(runs_root: RepoRoot, rg_path: str | None) -> None:
    result = await FindTool(runs_root, rg_path=rg_path).run({"pattern": "*.jsonl"})
    assert result.text == "no files match '*.jsonl'"
    everything = await FindTool(runs_root, rg_path=rg_path).run({"pattern": "**", "path": "out"})
    assert everything.text == "out/notes.md"


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (ReadTool, {"path": "out/runs/20260101-000000-abcd/board.jsonl"}),
        (ReadTool, {"path": "runs_link/20260101-000000-abcd/board.jsonl"}),
        (GrepTool, {"pattern": "batch", "path": "out/runs"}),
        (FindTool, {"pattern": "*", "path": "runs_link"}),
        (LsTool, {"path": "out/runs/20260101-000000-abcd/bees"}),
    ],
)
async def test_a_path_into_the_runs_directory_is_refused(runs_root: RepoRoot, tool: type, args: dict[str, str]) -> None:
    result = await tool(runs_root).run(args)
    assert not result.ok
    assert "is in hive's own runs directory, which is not part of the repository under investigation" in result.text
    assert result.activity.endswith("refused (hive's runs directory)")


async def test_ls_marks_the_runs_directory(runs_root: RepoRoot) -> None:
    result = await LsTool(runs_root).run({"path": "out"})
    assert result.text.splitlines() == [
        f"notes.md  ({len('batch_size in the project' + chr(39) + 's own out/ directory') + 1} bytes)",
        "runs/  (hive's runs directory; not part of the investigation)",
    ]


@pytest.mark.parametrize("rg_path", BACKENDS)
@pytest.mark.parametrize("glob", ["*", "**", "**/description"])
async def test_a_catch_all_glob_does_not_bring_dot_git_back(
    root: RepoRoot, repo: Path, rg_path: str | None, glob: str
) -> None:
    (repo / ".git").mkdir()
    (repo / ".git" / "description").write_text("batch_size inside .git\n")
    result = await GrepTool(root, rg_path=rg_path).run({"pattern": "batch_size", "glob": glob})
    assert ".git/" not in result.text


async def test_a_backtracking_pattern_cannot_freeze_the_python_search(root: RepoRoot, repo: Path) -> None:
    # `(a+)+$` on 40 a's and a '!' backtracks for days. Python's re holds the GIL meanwhile, so in a thread of the
    # bee it froze the bee's event loop; as a process it is killed at the search's time limit.
    (repo / "src" / "pathological.txt").write_text("a" * 40 + "!\n")
    result = await GrepTool(root, rg_path=None, seconds=1).run({"pattern": "(a+)+$", "path": "src"})
    assert result.ok and result.text == "no matches\n[search stopped after 1 s; results are partial]"


async def test_the_python_search_cannot_import_a_module_from_the_repository(
    root: RepoRoot, repo: Path, tmp_path: Path
) -> None:
    # It runs with the repository as its working directory: a file there named like one of its imports must not
    # run in its place (unsandboxed, with the bee's environment).
    planted = tmp_path / "planted-code-ran"
    for module in ("argparse", "re", "hive"):
        (repo / f"{module}.py").write_text(f"open({str(planted)!r}, 'a').write({module!r})\n")
    result = await GrepTool(root, rg_path=None).run({"pattern": "return 32"})
    assert result.text == "src/pkg/core.py:4:    return 32"
    assert not planted.exists()
