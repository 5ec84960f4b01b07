"""The CLI shell: ``--version``, ``ls``, ``show``, ``schema``, and one clear line for every bad input."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from denied import assert_denied, hive_denied, locked
from run_factory import make_run

from hive import __version__
from hive.cli import main
from hive.records import Delivery, Dispute, Note, NoteKind, Relation, RunInfo
from hive.store import write_json_atomic

AT = "2026-11-30T03:04:05.123Z"


@pytest.fixture
def runs_dir() -> Path:
    """The runs directory the CLI finds through ``HIVE_RUNS_DIR`` (set per test by conftest)."""
    return Path(os.environ["HIVE_RUNS_DIR"])


def note(nid: str, bee: str, text: str, kind: NoteKind = "finding") -> Note:
    return Note(id=nid, bee=bee, kind=kind, text=text, score=0.82, at=AT)


BOARD = [
    note("n1", "bee-1", "The cache key ignores the locale."),
    note("n2", "bee-2", "The locale is read after the cache lookup."),
    Relation(later="n2", earlier="n1", relation="supports", score=0.8, at=AT),
    note("n3", "bee-2", "Templates are compiled once per process.", kind="decision"),
    note("n4", "bee-1", "Templates are recompiled on every request."),
    Relation(later="n4", earlier="n3", relation="contradicts", score=0.7, at=AT),
    Dispute(id="x1", notes=("n3", "n4"), at=AT),
    note("n5", "bee-1", "An old guess about DNS."),
    note("n6", "bee-1", "DNS is fine; the guess about DNS was wrong."),
    Relation(later="n6", earlier="n5", relation="supersedes", score=0.9, at=AT),
    Delivery(note="n1", to="bee-2", how="judge", at=AT),
]


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    """Assert the command printed exactly one error line and nothing else; return it."""
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("hive: error: ")
    assert "Traceback" not in captured.err
    return lines[0]


# --------------------------------------------------------------------------- --version, --help


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"hive {__version__}\n"


def test_help_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for command in ("ls", "show", "schema"):
        assert command in out


def test_no_arguments_shows_help_without_a_bogus_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    captured = capsys.readouterr()
    assert "Usage" in captured.out
    assert "error" not in captured.err


def test_python_dash_m_hive_runs_the_cli() -> None:
    done = subprocess.run([sys.executable, "-m", "hive", "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0
    assert done.stdout == f"hive {__version__}\n"


@pytest.mark.parametrize(
    "code",
    [
        "import hive.cli.app",
        # what `hive --help` itself loads: every registered command module
        "from hive.cli import main; main(['--help'])",
    ],
)
def test_the_cli_import_path_loads_no_heavy_module(code: str) -> None:
    probe = (
        f"{code}\nimport sys\n"
        "heavy = {'onnxruntime', 'numpy', 'tokenizers', 'torch'}\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(heavy, 'rich.live' in sys.modules, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines()[-1] == "[] False"


@pytest.mark.parametrize("args", [["schema", "--json"], ["show", "latest"], ["ls", "--json"]])
def test_a_reader_that_went_away_ends_any_command_quietly_with_0(runs_dir: Path, args: list[str]) -> None:
    """`hive show | head -1`: the reader had what it wanted; click alone would exit 1, a failed run's code."""
    make_run(runs_dir, "20261130-030000-aaaa", board=BOARD, answer="The answer.\n" * 100)
    read_end, write_end = os.pipe()
    os.close(read_end)  # gone before the command writes a byte
    try:
        done = subprocess.run([sys.executable, "-m", "hive", *args], env={**os.environ, "HIVE_RUNS_DIR": str(runs_dir)},
                              stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


# --------------------------------------------------------------------------- ls


def test_ls_of_no_runs(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls"]) == 0
    assert capsys.readouterr().out == f"no runs in {str(runs_dir)!r}\n"  # as every other command says it
    assert main(["ls", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out) == []


def test_ls_of_a_runs_dir_that_does_not_exist_is_empty(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ls", "--runs-dir", str(tmp_path / "nowhere")]) == 0
    assert "no runs in" in capsys.readouterr().out


def test_ls_lists_runs_with_status_bees_duration_notes_and_problem(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run(runs_dir, "20261130-030000-aaaa", problem="Why is checkout in English?", board=BOARD, bees=3)
    make_run(runs_dir, "20261130-040000-bbbb", problem="Flaky test", status="failed", board=[])
    assert main(["ls"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["RUN", "STATUS", "BEES", "TIME", "NOTES", "PROBLEM"]
    assert lines[1].split()[:5] == ["20261130-030000-aaaa", "finished", "3", "2m05s", "6"]
    assert lines[1].endswith("  Why is checkout in English?")
    assert lines[2].split()[:5] == ["20261130-040000-bbbb", "failed", "2", "2m05s", "0"]


def test_ls_json(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = make_run(runs_dir, "20261130-030000-aaaa", problem="Why?", board=BOARD)
    assert main(["ls", "--json"]) == 0
    rows = orjson.loads(capsys.readouterr().out)
    assert rows == [
        {
            "id": "20261130-030000-aaaa",
            "status": "finished",
            "problem": "Why?",
            "bees": 2,
            "duration_s": 125.0,
            "notes": 6,
            "started_at": "2026-11-30T03:00:00.000Z",
            "path": str(paths.dir),
        }
    ]


def test_ls_shows_a_run_whose_coordinator_died_as_interrupted(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    make_run(runs_dir, "r1", status="running", ended_at=None, pid=int(child.stdout))
    assert main(["ls", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)[0]["status"] == "interrupted"


def test_ls_lists_an_unreadable_run_without_hiding_the_others(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run(runs_dir, "r1").run_json.write_text("{torn")
    make_run(runs_dir, "r2").board.unlink()
    (runs_dir / "r2" / "board.jsonl").mkdir()
    make_run(runs_dir, "r3", problem="fine")
    assert main(["ls", "--json"]) == 0
    rows = orjson.loads(capsys.readouterr().out)
    assert [(r["id"], r["status"]) for r in rows] == [
        ("r1", "unreadable"),
        ("r2", "unreadable"),
        ("r3", "finished"),
    ]
    assert "not a valid run.json" in rows[0]["error"] and rows[0]["problem"] is None
    assert "cannot read" in rows[1]["error"] and rows[1]["problem"] == "Why is the build slow?"
    assert "error" not in rows[2]
    assert main(["ls"]) == 0
    assert "unreadable" in capsys.readouterr().out


def test_runs_dir_option_beats_the_environment(
    runs_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make_run(runs_dir, "from-env")
    make_run(tmp_path / "other", "from-option")
    assert main(["ls", "--json", "--runs-dir", str(tmp_path / "other")]) == 0
    assert [r["id"] for r in orjson.loads(capsys.readouterr().out)] == ["from-option"]


# --------------------------------------------------------------------------- show


def test_show_prints_the_answer_and_the_standing_board(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "20261130-030000-aaaa", problem="Why English?", board=BOARD, answer="## Answer\nThe key.\n")
    assert main(["show", "20261130"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "run 20261130-030000-aaaa · finished · Why English?"
    assert "## Answer\nThe key.\n" in out
    assert "Standing board: 5 notes, 1 corrected" in out
    assert "- [finding 0.82] bee-1 (confirmed by bee-2): The cache key ignores the locale." in out
    assert "- [decision 0.82] bee-2 (in dispute): Templates are compiled once per process." in out
    assert "- [finding 0.82] bee-1 (in dispute): Templates are recompiled on every request." in out
    assert "An old guess about DNS." not in out
    assert "DNS is fine" in out


def test_show_escapes_control_characters_as_tail_does(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = "bell\a here\rover\x1b[2Jcleared\n\tnext line"
    make_run(runs_dir, "r1", problem="why\x1b]0;title\a?", board=[note("n1", "bee-1", text)], answer=f"{text}\n")
    assert main(["show", "r1"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\a" not in out and "\r" not in out
    assert out.splitlines()[0] == "run r1 · finished · why\\x1b]0;title\\x07?"
    assert "bell\\x07 here\\x0dover\\x1b[2Jcleared\n\tnext line" in out  # the answer
    assert "- [finding 0.82] bee-1: bell\\x07 here\\x0dover\\x1b[2Jcleared\n\tnext line" in out
    assert main(["show", "r1", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["standing"][0]["text"] == text  # JSON escapes on its own


def test_ls_escapes_control_characters_in_a_problem(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "r1", problem="why\x1b]0;title\a the \x1b[2Jscreen?")
    assert main(["ls"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\a" not in out
    assert out.splitlines()[1].endswith("why\\x1b]0;title\\x07 the \\x1b[2Jscreen?")


def test_show_points_a_stopped_run_to_hive_resume(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "r1", problem="Why?", status="interrupted")
    assert main(["show", "r1"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == [
        "run r1 · interrupted · Why?", "(it stopped before the end: 'hive resume r1' goes on with it)"]
    paths = make_run(runs_dir, "r2", problem="Why?")
    info = RunInfo.model_validate_json(paths.run_json.read_bytes())
    write_json_atomic(paths.run_json, info.model_copy(update={"resumed_at": ["2026-11-30T04:00:00.000Z"]}))
    assert main(["show", "r2"]) == 0
    assert capsys.readouterr().out.splitlines()[:2] == ["run r2 · finished · resumed 1× · Why?", ""]


def test_show_json(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "20261130-030000-aaaa", board=BOARD, answer="The key.")
    assert main(["show", "20261130-030000-aaaa", "--json"]) == 0
    shown = orjson.loads(capsys.readouterr().out)
    assert shown["run"]["id"] == "20261130-030000-aaaa"
    assert shown["status"] == "finished"
    assert shown["answer"] == "The key."
    assert [n["id"] for n in shown["standing"]] == ["n1", "n2", "n3", "n4", "n6"]
    assert shown["standing"][0] == orjson.loads(orjson.dumps(BOARD[0].model_dump(mode="json", exclude_none=True)))
    assert shown["superseded"] == {"n5": "n6"}
    assert shown["contested"] == [["n3", "n4"]]


def test_show_defaults_to_the_latest_run(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "old", started_at="2026-11-29T00:00:00.000Z")
    make_run(runs_dir, "new", started_at="2026-11-30T00:00:00.000Z")
    assert main(["show"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("run new ")
    assert "(no answer.md yet)" in out
    assert main(["show", "latest", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["run"]["id"] == "new"


def test_show_accepts_a_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = make_run(tmp_path / "somewhere", "r1")
    assert main(["show", str(paths.dir), "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)["run"]["id"] == "r1"


def test_show_skips_a_corrupt_board_line_with_one_warning_naming_it(
    runs_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = make_run(runs_dir, "r1", board=BOARD[:2])
    with open(paths.board, "ab") as f:
        f.write(b'{"type":"note","id":\n' + BOARD[3].model_dump_json().encode() + b"\n" + b'{"type":"no')
    for _ in range(2):  # a second call in the same process must not print the warning twice
        assert main(["show", "r1", "--json"]) == 0
        captured = capsys.readouterr()
        assert [n["id"] for n in orjson.loads(captured.out)["standing"]] == ["n1", "n2", "n3"]
        warnings = captured.err.splitlines()
        assert len(warnings) == 1
        assert warnings[0].startswith("hive: warning: ")
        assert "board.jsonl: line 3: skipped a corrupt line" in warnings[0]


# --------------------------------------------------------------------------- schema


@pytest.mark.parametrize("name", [[], ["board.jsonl"]])
def test_schema_takes_json_like_every_reporting_command(name: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", *name]) == 0
    plain = capsys.readouterr().out
    assert main(["schema", *name, "--json"]) == 0
    assert capsys.readouterr().out == plain
    assert orjson.loads(plain)


# --------------------------------------------------------------------------- bad input: one line, exit 2


def test_unknown_run(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "20261130-030000-aaaa")
    assert main(["show", "2027"]) == 2
    assert "no run matches '2027'" in one_error_line(capsys)


def test_ambiguous_prefix(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "20261130-030000-aaaa")
    make_run(runs_dir, "20261130-040000-bbbb")
    assert main(["show", "20261130"]) == 2
    line = one_error_line(capsys)
    assert "ambiguous" in line and "20261130-030000-aaaa" in line and "20261130-040000-bbbb" in line


def test_empty_runs_dir(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show"]) == 2
    assert "no runs in" in one_error_line(capsys)


def test_missing_runs_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "--runs-dir", str(tmp_path / "nowhere")]) == 2
    assert "no runs in" in one_error_line(capsys)


@pytest.mark.parametrize("command", [["ls"], ["ls", "--json"], ["show"], ["show", "abc"]])
def test_runs_dir_that_is_a_file(tmp_path: Path, command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs").write_text("not a directory")
    assert main([*command, "--runs-dir", str(tmp_path / "runs")]) == 2
    assert "is not a directory" in one_error_line(capsys)


@pytest.mark.parametrize("content", ["", "{torn", "[]", '{"id": "r1"}'])
def test_invalid_run_json(runs_dir: Path, content: str, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "r1").run_json.write_text(content)
    assert main(["show", "r1"]) == 2
    assert "is not a valid run.json" in one_error_line(capsys)


def test_run_json_that_cannot_be_read(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Tests run as root, for whom chmod 000 changes nothing; a directory in its place is unreadable to all.
    paths = make_run(runs_dir, "r1")
    paths.run_json.unlink()
    paths.run_json.mkdir()
    for ref in ("r1", "latest", str(paths.dir)):
        assert main(["show", ref]) == 2
        assert f"cannot read {paths.run_json}" in one_error_line(capsys)
    assert main(["ls", "--json"]) == 0
    assert orjson.loads(capsys.readouterr().out)[0]["status"] == "unreadable"


def test_board_that_cannot_be_read(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    paths = make_run(runs_dir, "r1")
    paths.board.unlink()
    paths.board.mkdir()
    assert main(["show", "r1"]) == 2
    assert "cannot read" in one_error_line(capsys)


@pytest.mark.slow
def test_runs_dir_and_repository_inside_a_directory_that_cannot_be_searched_are_one_error_line(tmp_path: Path) -> None:
    runs = tmp_path / "locked" / "runs"
    make_run(runs, "r1")
    with locked(runs.parent):
        assert_denied(runs.parent)
        for argv in (["ls"], ["ls", "--json"], ["show"], ["show", "r1"], ["resume"]):
            done = hive_denied(*argv, "--runs-dir", str(runs))
            assert (done.returncode, done.stdout) == (2, ""), argv
            assert done.stderr == f"hive: error: cannot read runs directory {str(runs)!r}: permission denied\n"
        done = hive_denied("start", "Why?", "--repo", str(tmp_path), "--model", "openai:gpt-4.1-mini",
                           "--runs-dir", str(runs / "new"))
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == (f"hive: error: runs directory {str(runs / 'new')!r} cannot be reached "
                               "(Permission denied)\n")
        done = hive_denied("start", "Why?", "--repo", str(runs), "--model", "openai:gpt-4.1-mini")
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"hive: error: repository {str(runs)!r} cannot be reached (Permission denied)\n"


@pytest.mark.slow
def test_an_answer_that_cannot_be_read_is_one_error_line(runs_dir: Path) -> None:
    paths = make_run(runs_dir, "r1", answer="The answer.\n")
    mode = paths.answer.stat().st_mode
    paths.answer.chmod(0)
    try:
        done = hive_denied("show", "r1", "--runs-dir", str(runs_dir))
    finally:
        paths.answer.chmod(mode)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"hive: error: cannot read {paths.answer}: Permission denied\n"


@pytest.mark.slow
def test_a_run_directory_that_cannot_be_read_is_listed_and_skipped_never_a_traceback(runs_dir: Path) -> None:
    make_run(runs_dir, "20261130-030000-aaaa", problem="Why?")
    denied = make_run(runs_dir, "20261130-040000-bbbb")  # started last: `latest` would be it
    with locked(denied.dir):
        assert_denied(denied.dir)
        done = hive_denied("ls", "--json")
        assert (done.returncode, done.stderr) == (0, "")
        rows = orjson.loads(done.stdout)
        assert [(r["id"], r["status"]) for r in rows] == [
            ("20261130-030000-aaaa", "finished"), ("20261130-040000-bbbb", "unreadable")]
        assert rows[1]["error"] == f"cannot read {denied.run_json}: permission denied"
        assert rows[1]["problem"] is None
        done = hive_denied("ls")
        assert done.returncode == 0 and "unreadable" in done.stdout.splitlines()[2]
        for argv in (["show"], ["show", "latest"], ["show", "20261130"], ["audit", "2026"]):
            done = hive_denied(*argv)
            assert (done.returncode, done.stderr) == (0, ""), argv
            assert done.stdout.startswith("run 20261130-030000-aaaa"), argv
        for argv in (["show", denied.id], ["show", str(denied.dir)], ["audit", str(denied.dir)],
                     ["tail", "--no-follow", str(denied.dir)]):
            done = hive_denied(*argv)
            assert (done.returncode, done.stdout) == (2, ""), argv
            assert done.stderr == f"hive: error: cannot read {denied.run_json}: permission denied\n", argv
        done = hive_denied("tail", denied.id)  # following: the board is what cannot be read
        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr == f"hive: error: cannot read {denied.board}: Permission denied\n"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["frobnicate"], "No such command"),
        (["ls", "--colour"], "No such option"),
        (["show", "a", "b"], "unexpected extra argument"),
        (["schema", "nope"], "unknown record type 'nope'"),
    ],
)
def test_bad_command_lines(argv: list[str], expected: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert expected in one_error_line(capsys)


def test_debug_adds_the_traceback(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--debug", "show", "nothing"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "RunNotFound" in err
    assert err.splitlines()[-1].startswith("hive: error: no runs in")


@pytest.mark.parametrize("argv", [["show", "nothing", "--debug"], ["show", "--debug", "nothing"],
                                  ["audit", "nothing", "--debug"], ["tail", "--debug", "nothing"]])
def test_debug_is_taken_anywhere_on_the_command_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and "RunNotFound" in err
    assert err.splitlines()[-1].startswith("hive: error: no runs in")


def test_debug_after_a_double_dash_is_an_argument(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "--", "--debug"]) == 2
    assert "no runs in" in one_error_line(capsys)


def test_reading_commands_change_nothing_on_disk(runs_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_run(runs_dir, "r1", board=BOARD, answer="The key.")
    damaged = make_run(runs_dir, "r2", board=BOARD[:1])
    with open(damaged.board, "ab") as f:
        f.write(b"garbage\n" + b'{"type":"note"')
    make_run(runs_dir, "r3").run_json.write_text("{torn")

    def snapshot() -> dict[str, bytes]:
        return {str(p.relative_to(runs_dir)): p.read_bytes() for p in sorted(runs_dir.rglob("*")) if p.is_file()}

    before = snapshot()
    for argv in (["ls"], ["ls", "--json"], ["show", "r1"], ["show", "r2", "--json"], ["show", "r3"], ["show", "r"]):
        main(argv)
    capsys.readouterr()
    assert snapshot() == before
