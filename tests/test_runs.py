"""Run directories: how a RUN reference finds one, and what state a run is really in."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
from run_factory import make_run

from hive.errors import RunNotFound, UsageError
from hive.records import RunInfo
from hive.runs import (
    RunPaths,
    duration_seconds,
    effective_status,
    last_sign_of_life,
    list_run_dirs,
    load_run_info,
    new_run_id,
    resolve_run,
    runs_dir_from,
)


def dead_pid() -> int:
    """The id of a process that has exited and been reaped."""
    child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
    return int(child.stdout)


# --------------------------------------------------------------------------- where runs live


def test_runs_dir_comes_from_the_option_then_the_environment_then_the_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HIVE_RUNS_DIR", "/from/env")
    assert runs_dir_from("/from/option") == Path("/from/option")
    assert runs_dir_from(None) == Path("/from/env")
    monkeypatch.delenv("HIVE_RUNS_DIR")
    assert runs_dir_from(None) == Path("runs")


def test_new_run_ids_sort_by_start_time() -> None:
    first, second = new_run_id(), new_run_id()
    assert re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{4}", first)
    assert first[:15] <= second[:15]


def test_run_paths_name_every_file_of_a_run(tmp_path: Path) -> None:
    paths = RunPaths(tmp_path / "20261130-030405-a1b2")
    assert paths.id == "20261130-030405-a1b2"
    assert paths.run_json.name == "run.json"
    assert paths.board.name == "board.jsonl"
    assert paths.gate.name == "gate.jsonl"
    assert paths.answer.name == "answer.md"
    assert paths.transcript("bee-2") == paths.dir / "bees" / "bee-2" / "transcript.jsonl"
    assert paths.brief("bee-2") == paths.dir / "bees" / "bee-2" / "brief.json"


def test_list_run_dirs_keeps_only_run_directories_sorted_by_name(tmp_path: Path) -> None:
    make_run(tmp_path, "r2")
    make_run(tmp_path, "r1")
    (tmp_path / "scratch").mkdir()
    (tmp_path / "notes.txt").write_text("not a run")
    assert [r.id for r in list_run_dirs(tmp_path)] == ["r1", "r2"]


def test_list_run_dirs_of_a_missing_directory_is_empty(tmp_path: Path) -> None:
    assert list_run_dirs(tmp_path / "nothing-here") == []


def test_list_run_dirs_of_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("")
    with pytest.raises(UsageError, match="is not a directory"):
        list_run_dirs(tmp_path / "runs")


# --------------------------------------------------------------------------- RUN resolution


def test_an_exact_id_wins_over_a_longer_id_it_prefixes(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    make_run(tmp_path, "20261130-030405-a1b2x")
    assert resolve_run(tmp_path, "20261130-030405-a1b2").id == "20261130-030405-a1b2"


def test_a_unique_prefix_finds_its_run(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    make_run(tmp_path, "20261201-111111-ffff")
    assert resolve_run(tmp_path, "20261201").id == "20261201-111111-ffff"
    assert resolve_run(tmp_path, "  20261130 ").id == "20261130-030405-a1b2"


def test_an_ambiguous_prefix_is_an_error_that_lists_the_matches(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    make_run(tmp_path, "20261130-040000-c3d4")
    make_run(tmp_path, "20261201-111111-ffff")
    with pytest.raises(RunNotFound) as caught:
        resolve_run(tmp_path, "20261130")
    message = str(caught.value)
    assert "ambiguous" in message and "2 runs match" in message
    assert "20261130-030405-a1b2" in message and "20261130-040000-c3d4" in message
    assert "20261201" not in message


def test_an_ambiguous_prefix_with_many_matches_names_a_few_and_the_count(tmp_path: Path) -> None:
    for n in range(7):
        make_run(tmp_path, f"2026113{n}")
    with pytest.raises(RunNotFound, match="7 runs match") as caught:
        resolve_run(tmp_path, "2026")
    assert len(str(caught.value).splitlines()) == 1


def test_an_empty_run_is_refused_not_taken_as_a_prefix_of_every_id(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    for empty in ("", "  "):
        with pytest.raises(RunNotFound, match="RUN is empty"):
            resolve_run(tmp_path, empty)
    assert resolve_run(tmp_path, None).id == "20261130-030405-a1b2"  # no RUN at all means latest


def test_an_unknown_id_is_run_not_found(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    with pytest.raises(RunNotFound, match="no run matches '2027'"):
        resolve_run(tmp_path, "2027")


def test_latest_is_the_run_started_last_whatever_its_name(tmp_path: Path) -> None:
    make_run(tmp_path, "b-run", started_at="2026-11-30T05:00:00.000Z")
    make_run(tmp_path, "c-run", started_at="2026-11-30T04:00:00.000Z")
    make_run(tmp_path, "a-run", started_at="2026-11-30T03:00:00.000Z")
    assert resolve_run(tmp_path, "latest").id == "b-run"
    assert resolve_run(tmp_path, None).id == "b-run"


def test_latest_skips_a_run_whose_run_json_cannot_be_read(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    broken = make_run(tmp_path, "20261130-050000-ffff")
    broken.run_json.write_text("{not json")
    assert resolve_run(tmp_path, "latest").id == "20261130-030405-a1b2"


def test_latest_of_only_unreadable_runs_is_the_last_so_reading_it_says_why(tmp_path: Path) -> None:
    for run_id in ("r1", "r2"):
        make_run(tmp_path, run_id).run_json.write_text("{not json")
    assert resolve_run(tmp_path, "latest").id == "r2"
    with pytest.raises(UsageError, match=r"is not a valid run\.json"):
        load_run_info(resolve_run(tmp_path, "latest"))


def test_a_prefix_skips_an_unreadable_run_when_a_readable_one_matches(tmp_path: Path) -> None:
    make_run(tmp_path, "20261130-030405-a1b2")
    make_run(tmp_path, "20261130-050000-ffff").run_json.write_text("{not json")
    assert resolve_run(tmp_path, "20261130").id == "20261130-030405-a1b2"
    assert resolve_run(tmp_path, "20261130-05").id == "20261130-050000-ffff"  # the one named: its error shows
    make_run(tmp_path, "20261130-060000-eeee")
    with pytest.raises(RunNotFound, match="ambiguous: 2 runs match"):
        resolve_run(tmp_path, "20261130")


def test_a_path_to_a_run_directory_is_accepted_wherever_it_is(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = make_run(tmp_path / "elsewhere", "my-run")
    empty_runs = tmp_path / "runs"
    assert resolve_run(empty_runs, str(elsewhere.dir)).dir == elsewhere.dir
    monkeypatch.chdir(tmp_path)
    assert resolve_run(empty_runs, "elsewhere/my-run").id == "my-run"


def test_a_path_that_is_not_a_run_directory_says_so(tmp_path: Path) -> None:
    make_run(tmp_path, "r1")
    (tmp_path / "plain").mkdir()
    with pytest.raises(RunNotFound, match="is not a run directory"):
        resolve_run(tmp_path, str(tmp_path / "plain"))


def test_an_empty_runs_dir_has_no_runs(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="no runs in"):
        resolve_run(tmp_path, "latest")


def test_a_missing_runs_dir_has_no_runs(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match="no runs in"):
        resolve_run(tmp_path / "missing", "abc")


def test_a_runs_dir_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "runs").write_text("")
    with pytest.raises(UsageError, match="not a directory"):
        resolve_run(tmp_path / "runs", "latest")


# --------------------------------------------------------------------------- run.json


def test_load_run_info_reads_what_was_written(tmp_path: Path) -> None:
    paths = make_run(tmp_path, "r1", problem="Why?")
    info = load_run_info(paths)
    assert info.id == "r1" and info.problem == "Why?" and len(info.bees) == 2


def test_a_directory_without_run_json_is_not_a_run(tmp_path: Path) -> None:
    with pytest.raises(RunNotFound, match=r"no run\.json"):
        load_run_info(RunPaths(tmp_path))


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b"[]", b'{"id": "r1"}', b'{"id":"r1","problem":"p","repo":".","status":"odd"}'],
)
def test_an_invalid_run_json_is_a_usage_error(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "run.json").write_bytes(content)
    with pytest.raises(UsageError, match=r"is not a valid run\.json"):
        load_run_info(RunPaths(tmp_path))


def test_a_run_json_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "run.json").mkdir()
    with pytest.raises(UsageError, match="cannot read"):
        load_run_info(RunPaths(tmp_path))


def test_a_run_whose_run_json_cannot_be_read_is_still_found_so_the_error_can_say_why(tmp_path: Path) -> None:
    make_run(tmp_path, "r1").run_json.unlink()
    (tmp_path / "r1" / "run.json").mkdir()
    assert [r.id for r in list_run_dirs(tmp_path)] == ["r1"]
    assert resolve_run(tmp_path, "r1").id == "r1"
    assert resolve_run(tmp_path, str(tmp_path / "r1")).id == "r1"


# --------------------------------------------------------------------------- status


def info(**fields: object) -> RunInfo:
    return RunInfo.model_validate({"id": "r1", "problem": "p", "repo": ".", **fields})


@pytest.mark.parametrize("status", ["finished", "interrupted", "failed"])
def test_a_run_that_ended_keeps_its_status(status: str) -> None:
    assert effective_status(info(status=status, pid=dead_pid())) == status


def test_a_running_run_whose_coordinator_is_alive_is_running() -> None:
    assert effective_status(info(status="running", pid=os.getpid(), host=socket.gethostname())) == "running"


def test_a_running_run_whose_coordinator_died_reads_interrupted() -> None:
    assert effective_status(info(status="running", pid=dead_pid())) == "interrupted"
    assert effective_status(info(status="running", pid=dead_pid(), host=socket.gethostname())) == "interrupted"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs to see a zombie")
def test_a_killed_coordinator_not_yet_reaped_reads_interrupted() -> None:
    coordinator = subprocess.Popen(["sleep", "30"])
    try:
        coordinator.kill()
        deadline = time.monotonic() + 10
        while Path(f"/proc/{coordinator.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert effective_status(info(status="running", pid=coordinator.pid, host=socket.gethostname())) == "interrupted"
    finally:
        coordinator.wait()


def test_a_running_run_without_a_pid_cannot_be_judged_and_stays_running() -> None:
    assert effective_status(info(status="running")) == "running"


def test_a_running_run_on_another_host_cannot_be_judged_and_stays_running() -> None:
    assert effective_status(info(status="running", pid=dead_pid(), host="some-other-host")) == "running"


@pytest.mark.parametrize("pid", [0, -1])
def test_a_pid_that_names_no_single_process_reads_interrupted(pid: int) -> None:
    assert effective_status(info(status="running", pid=pid)) == "interrupted"


def test_duration_runs_from_start_to_end() -> None:
    ended = info(started_at="2026-11-30T03:00:00.000Z", ended_at="2026-11-30T03:02:05.500Z")
    assert duration_seconds(ended) == 125.5


def test_duration_of_a_run_still_going_counts_to_now() -> None:
    going = info(started_at="2026-11-30T03:00:00.000Z")
    first = duration_seconds(going)
    assert first is not None and first >= 0


def test_duration_of_a_run_that_died_ends_at_its_last_sign_of_life() -> None:
    dead = info(started_at="2026-11-30T03:00:00.000Z", pid=dead_pid())
    last = datetime(2026, 11, 30, 3, 1, 30, tzinfo=UTC)
    assert duration_seconds(dead, last_seen=last) == 90.0
    assert duration_seconds(dead) is None  # unknown, rather than growing for ever
    stopped = info(started_at="2026-11-30T03:00:00.000Z", status="interrupted")
    assert duration_seconds(stopped, last_seen=last) == 90.0


def test_the_last_sign_of_life_is_the_latest_change_to_the_run_files(tmp_path: Path) -> None:
    paths = make_run(tmp_path, "r1")
    assert last_sign_of_life(RunPaths(tmp_path / "nothing")) is None
    paths.transcript("bee-1").parent.mkdir(parents=True)
    paths.transcript("bee-1").write_text("")
    for path, stamp in ((paths.run_json, 100), (paths.board, 300), (paths.transcript("bee-1"), 200)):
        os.utime(path, (stamp, stamp))
    assert last_sign_of_life(paths) == datetime.fromtimestamp(300, UTC)
    paths.gate.write_text("")
    os.utime(paths.gate, (400, 400))
    assert last_sign_of_life(paths) == datetime.fromtimestamp(400, UTC)


def test_duration_of_a_run_with_a_garbled_timestamp_is_unknown() -> None:
    assert duration_seconds(info(started_at="yesterday")) is None


def test_duration_of_a_run_json_written_without_a_time_zone_reads_it_as_utc() -> None:
    assert duration_seconds(info(started_at="2026-11-30T03:00:00", ended_at="2026-11-30T03:00:10Z")) == 10.0
    assert duration_seconds(info(started_at="2026-11-30T03:00:00")) is not None


def test_a_run_named_by_dot_from_inside_it_keeps_its_id(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`hive resume .` in a run directory once rewrote its run.json with the id ''."""
    paths = make_run(tmp_path / "runs", "20261130-030405-a1b2")
    (paths.dir / "bees").mkdir()
    monkeypatch.chdir(paths.dir)
    for ref in (".", "./", "../20261130-030405-a1b2", "bees/.."):
        assert resolve_run(tmp_path / "elsewhere", ref).id == "20261130-030405-a1b2", ref


def test_a_directory_named_by_a_bare_name_that_is_no_run_says_so(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r2").mkdir()
    with pytest.raises(RunNotFound, match=r"^r2 is not a run directory \(no run.json\)$"):
        resolve_run(tmp_path / "runs", "r2")
    with pytest.raises(RunNotFound, match="no runs in"):
        resolve_run(tmp_path / "runs", "latest")
    with pytest.raises(RunNotFound, match="no runs in"):
        resolve_run(tmp_path / "runs", "r3")
