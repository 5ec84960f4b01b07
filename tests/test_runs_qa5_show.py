"""A board of one note reads "1 note", in answer.md and in ``hive show``."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from hive.board import fold
from hive.cli import main
from hive.coordinator.answer import board_sections
from hive.records import Note, RunInfo
from hive.store import write_json_atomic

NOTE = Note(id="n-0001", bee="bee-1", kind="finding", text="FOUND: app/export.py:5 drops the last batch.", score=0.9)


def test_the_answer_s_board_heading_counts_one_note_in_the_singular() -> None:
    assert board_sections(fold([NOTE])).splitlines()[0] == "## Board: 1 note, 0 corrected, 0 unsettled"


def test_show_counts_one_standing_note_in_the_singular(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = tmp_path / "20261130-030000-abcd"
    run_dir.mkdir()
    write_json_atomic(run_dir / "run.json", RunInfo(id=run_dir.name, problem="Why?", repo=str(tmp_path),
                                                    status="finished"))
    (run_dir / "board.jsonl").write_bytes(orjson.dumps(NOTE.model_dump(mode="json")) + b"\n")
    assert main(["show", str(run_dir)]) == 0
    assert "Standing board: 1 note, 0 corrected" in capsys.readouterr().out.splitlines()
