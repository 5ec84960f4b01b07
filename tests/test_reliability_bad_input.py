"""Bad input: one line, exit 2, nothing written and nothing already written harmed; and input that is odd but
legal (damaged boards, files that are not UTF-8) still works.

Cases already covered elsewhere are listed in docs/reliability.md rather than repeated here: the empty
problem, bees outside 2–6, the --angle count, a missing repository or one that is a file, an unknown role,
model or judge spec, a missing API key and a huge problem (tests/test_coordinator_e2e.py); unknown run ids
and corrupt lines for single commands (tests/test_cli_runs.py, tests/test_tail.py, tests/test_audit.py).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from hive.cli import main
from tests.hive_runs import ls, publish_rules, report, run_hive, turn, write_judge, write_script
from tests.reliability_runs import ROUTINE_DELIVER, Hive, assert_one_publish_decision_per_utterance, load_info, notes


@pytest.fixture
def hive(tmp_path: Path) -> Hive:
    return Hive(tmp_path)


def tree_digest(root: Path) -> dict[str, str]:
    """Every file under ``root`` and the hash of its bytes."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hive: error: "), captured.err
    assert "Traceback" not in captured.err
    return lines[0]


BROKEN_ROLE = "---\nname: [broken\ntools: 3\n---\nYou are {bee}.\n"


def bad_start_cases(hive: Hive) -> list[tuple[list[str], str]]:
    """(arguments after ``start``, a fragment of the expected error)."""
    script = write_script(hive.root, {"bee-1": [report()], "bee-2": [report()]})
    judge = write_judge(hive.root, publish_rules())
    roles = hive.repo / ".hive" / "roles"
    roles.mkdir(parents=True)
    (roles / "broken.md").write_text(BROKEN_ROLE)
    shipped = (Path(__file__).resolve().parent.parent / "roles" / "investigator.md").read_text()
    (roles / "pinned.md").write_text(shipped.replace("name: investigator", "name: pinned\nmodel: script:gone.json", 1))
    (hive.root / "not-json.json").write_text("{ nope")
    (hive.root / "wrong-shape.json").write_text(json.dumps({"bees": {"bee-1": [{"say": 3, "extra": 1}]}}))
    (hive.root / "latin1.json").write_bytes(b'{"answer": "caf\xe9"}')
    (hive.root / "judge-not-json.json").write_text("[{")
    (hive.root / "judge-wrong.json").write_text(json.dumps([{"gate": "publish"}]))
    (hive.root / "a-file").write_text("not a directory")
    odd_repo = hive.root / "repo-\udcff"  # a directory whose name is not UTF-8
    odd_repo.mkdir()
    ok = ["--repo", str(hive.repo), "--model", f"script:{script}", "--judge", f"script:{judge}"]
    return [
        (["p", *ok, "--runs-dir", "/proc/hive-runs"], "is not writable"),
        (["p", *ok, "--runs-dir", str(hive.root / "a-file" / "runs")], "is not a directory"),
        (["p", *ok, "--runs-dir", str(hive.root / "runs-\udcff")], "is not valid UTF-8"),
        (["p", *ok, "--role", "broken"], "role file"),
        (["p", *ok, "--role", "pinned"], "gone.json"),
        (["p", *ok, "--runs-dir", ""], "--runs-dir is empty"),
        (["p", "--repo", str(hive.repo), "--model", f"script:{hive.root / 'not-json.json'}"], "not valid JSON"),
        (["p", "--repo", str(hive.repo), "--model", f"script:{hive.root / 'wrong-shape.json'}"], "say"),
        (["p", "--repo", str(hive.repo), "--model", f"script:{hive.root / 'latin1.json'}"], "cannot be read"),
        (["p", "--repo", str(hive.repo), "--model", f"script:{hive.root / 'missing.json'}"], "not found"),
        (["p", "--repo", str(hive.repo), "--model", f"script:{script}",
          "--judge", f"script:{hive.root / 'judge-not-json.json'}"], "is not JSON"),
        (["p", "--repo", str(hive.repo), "--model", f"script:{script}",
          "--judge", f"script:{hive.root / 'judge-wrong.json'}"], "rule 1"),
        (["why do \udcff\udcfe rows vanish?", *ok], "the problem is not valid UTF-8"),
        (["p", *ok, "--angle", "batching \udcff", "--angle", "config"], "--angle is not valid UTF-8"),
        (["p", *ok[2:], "--repo", str(odd_repo)], "repository path is not valid UTF-8"),
        (["p", *ok, "--stall-timeout", "0"], "--stall-timeout must be a positive number"),
        (["p", *ok, "--time-limit", "nan"], "--time-limit must be a positive number, not nan"),
        (["p", *ok, "--dispute-timeout", "inf"], "--dispute-timeout must be a positive number, not inf"),
        (["p", *ok, "--deadline", "nan"], "--deadline must be a positive number"),
        (["p", *ok, "--grace", "-inf"], "--grace must be a positive number"),
        (["p", *ok, "--max-steps", "0"], "--max-steps must be a positive number, not 0"),
        (["p", *ok, "--max-steps", str(10**23)], "--max-steps must be at most 2147483647"),
        (["p", *ok, "--delivery-cap", str(2**64)], "--delivery-cap must be at most 2147483647"),
        (["p" * 20_001, *ok], "characters; keep it under"),
    ]


def test_start_refuses_bad_input_in_one_line_and_harms_no_earlier_run(
    hive: Hive, capsys: pytest.CaptureFixture[str]
) -> None:
    earlier = hive.runs / "20261130-030000-aaaa"
    earlier.mkdir(parents=True)
    (earlier / "run.json").write_text(json.dumps({"id": earlier.name, "problem": "p", "repo": "/r"}))
    (earlier / "board.jsonl").write_text('{"type":"note","id":"n-0001","bee":"bee-1","kind":"finding",'
                                         '"text":"t","score":0.9,"at":"2026-11-30T03:00:01.000Z"}\n')
    before = tree_digest(hive.root)
    for args, expected in bad_start_cases(hive):
        extra = [] if "--runs-dir" in args else ["--runs-dir", str(hive.runs)]
        assert main(["start", *args, *extra]) == 2, args[:3]
        line = one_error_line(capsys)
        assert expected in line, (args[:3], line)
    after = tree_digest(hive.runs.parent)
    assert {k: v for k, v in after.items() if k.startswith("runs/")} == {
        k: v for k, v in before.items() if k.startswith("runs/")
    }
    assert [p.name for p in hive.runs.iterdir()] == [earlier.name]
    assert not (hive.root / "proc").exists() and not Path("/proc/hive-runs").exists()


@pytest.mark.slow
def test_the_bees_resolve_a_role_from_the_repository_like_the_coordinator(hive: Hive) -> None:
    """A role in <repo>/.hive/roles passes the start-up check and is the one the bee processes load, whatever
    directory `hive start` runs in."""
    roles = hive.repo / ".hive" / "roles"
    roles.mkdir(parents=True)
    shipped = (Path(__file__).resolve().parent.parent / "roles" / "investigator.md").read_text()
    (roles / "auditor.md").write_text(shipped.replace("name: investigator", "name: auditor", 1)
                                      .replace("You are {bee}", "You are {bee}, the auditor", 1))
    script = write_script(hive.root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the export rows.", ls()), report()],
        "bee-2": [report()],
    })
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    done = hive.run(f"script:{script}", f"script:{judge}", "--angle", "a", "--angle", "b", "--role", "auditor")
    assert done.returncode == 0, done.stderr
    run_dir = next(hive.runs.iterdir())
    info = load_info(run_dir)
    assert [(b.role, b.outcome) for b in info.bees] == [("auditor", "reported"), ("auditor", "reported")]
    assert "the auditor" in (run_dir / "bees" / "bee-1" / "transcript.jsonl").read_text()


@pytest.mark.slow
def test_a_role_that_pins_its_model_needs_no_model_option(hive: Hive) -> None:
    roles = hive.repo / ".hive" / "roles"
    roles.mkdir(parents=True)
    script = write_script(hive.root, {"bee-1": [report()], "bee-2": [report()]})
    shipped = (Path(__file__).resolve().parent.parent / "roles" / "investigator.md").read_text()
    # The script's path is relative to the role file: ../../.. climbs from repo/.hive/roles to the root.
    (roles / "pinned.md").write_text(
        shipped.replace("name: investigator", "name: pinned\nmodel: script:../../../script.json", 1)
    )
    judge = write_judge(hive.root, publish_rules())
    args = ["start", "p", "--repo", str(hive.repo), "--judge", f"script:{judge}", "--runs-dir", str(hive.runs),
            "--plain", "--role", "pinned", "--angle", "a", "--angle", "b"]
    done = run_hive(args, cwd=hive.root, env={"HIVE_MODEL": ""})
    assert done.returncode == 0, done.stderr
    info = load_info(next(hive.runs.iterdir()))
    assert info.model == f"script:{script.resolve()}"
    assert [(b.model, b.outcome) for b in info.bees] == [(info.model, "reported")] * 2


@pytest.mark.slow
def test_files_and_names_that_are_not_utf8_are_read_and_the_run_completes(hive: Hive) -> None:
    (hive.repo / "app" / "legacy.py").write_bytes(b'GREETING = "caf\xe9 \xff\xfe na\xefve"\n')
    (hive.repo / "app" / "r\xe9sum\xe9.txt".encode("latin-1").decode("utf-8", "surrogateescape")).write_bytes(
        b"\x80\x81 not text at all\n")
    tools = [
        {"name": "ls", "args": {"path": "app"}},
        {"name": "read", "args": {"path": "app/legacy.py"}},
        {"name": "grep", "args": {"pattern": "GREETING"}},
        {"name": "find", "args": {"pattern": "**/*"}},
        {"name": "bash", "args": {"command": "cat app/legacy.py; ls app; printf '\\377\\376\\n'"}},
    ]
    script = write_script(hive.root, {
        "bee-1": [turn("FOUND: app/legacy.py:1 holds latin-1 bytes, not UTF-8, in its GREETING constant.", tools),
                  report()],
        "bee-2": [report()],
    })
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    done = hive.run(f"script:{script}", f"script:{judge}", "--angle", "a", "--angle", "b", "--unsafe-bash")
    assert done.returncode == 0, done.stderr
    run_dir = next(hive.runs.iterdir())
    assert load_info(run_dir).status == "finished"
    results = [json.loads(line) for line in (run_dir / "bees" / "bee-1" / "transcript.jsonl").read_text().splitlines()]
    tool_results = {r["tool"]: r for r in results if r["event"] == "tool_result"}
    assert set(tool_results) == {"ls", "read", "grep", "find", "bash"}
    assert all(r["data"]["ok"] for r in tool_results.values()), tool_results
    assert "\ufffd" in tool_results["ls"]["content"] and "legacy.py" in tool_results["ls"]["content"]
    assert "caf\ufffd" in tool_results["read"]["content"]
    assert [n.bee for n in notes(run_dir)] == ["bee-1"]
    assert_one_publish_decision_per_utterance(run_dir)


# --------------------------------------------------------------------------- reading runs


@pytest.fixture(scope="module")
def two_finished_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real finished runs whose ids share a prefix (both start with the date), made once."""
    hive = Hive(tmp_path_factory.mktemp("two-runs"))
    script = write_script(hive.root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the export rows.", ls()), report()],
        "bee-2": [turn("FOUND: app/config.py:2 sets CUTOFF_HOUR = 0 and the export never reads it.", ls()),
                  report()],
    })
    judge = write_judge(hive.root, [*publish_rules(), ROUTINE_DELIVER])
    for _ in range(2):
        done = hive.run(f"script:{script}", f"script:{judge}", "--angle", "a", "--angle", "b")
        assert done.returncode == 0, done.stderr
    return hive.runs


@pytest.mark.slow
@pytest.mark.parametrize("command", ["show", "tail", "audit"])
def test_reading_commands_refuse_unknown_and_ambiguous_runs_and_read_damaged_boards(
    two_finished_runs: Path, tmp_path: Path, command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    shutil.copytree(two_finished_runs, runs)
    first, second = sorted(p.name for p in runs.iterdir())
    common = next(i for i, (a, b) in enumerate(zip(first, second, strict=True)) if a != b)
    assert main([command, "19990101", "--runs-dir", str(runs)]) == 2
    assert "no run matches '19990101'" in one_error_line(capsys)
    assert main([command, first[:common], "--runs-dir", str(runs)]) == 2
    assert "ambiguous" in one_error_line(capsys)

    # Damage the middle of the board and of the gate log: the commands warn, name the line and go on.
    run_dir = runs / first
    for name, junk in (("board.jsonl", b"\x00\xff{{ torn\n"), ("gate.jsonl", b'{"id": 3}\n')):
        lines = (run_dir / name).read_bytes().splitlines(keepends=True)
        (run_dir / name).write_bytes(b"".join([lines[0], junk, *lines[1:]]))
    before = tree_digest(run_dir)
    assert main([command, first, "--runs-dir", str(runs)]) == 0
    captured = capsys.readouterr()
    assert "board.jsonl: line 2: skipped a corrupt line" in captured.err
    assert "Traceback" not in captured.err
    assert "app/config.py:2" in captured.out or "app/export.py:5" in captured.out or command == "audit"
    assert tree_digest(run_dir) == before  # reading changes nothing
