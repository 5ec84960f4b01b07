"""``hive tail --follow`` on a run that has already ended says so, rather than stopping without a word."""

from __future__ import annotations

from pathlib import Path

import pytest

from hive.cli import main
from tests.observe_runs import RUN_ID, write_run


def test_follow_asked_of_an_ended_run_ends_with_how_it_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(tmp_path, status="interrupted")
    assert main(["tail", RUN_ID, "--runs-dir", str(tmp_path), "--follow"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"-- run {RUN_ID} interrupted")
    assert main(["tail", RUN_ID, "--runs-dir", str(tmp_path)]) == 0  # not asked to follow: the board alone
    assert not capsys.readouterr().out.splitlines()[-1].startswith("-- run")
    assert main(["tail", RUN_ID, "--runs-dir", str(tmp_path), "--follow", "--json"]) == 0  # records only
    assert all(line.startswith("{") for line in capsys.readouterr().out.splitlines())
