"""``hive audit --export-labels`` never throws a person's labels away: it writes over a missing or empty file,
or a template nobody has labelled yet, and refuses anything else in one line (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hive.cli import main
from tests.observe_runs import RUN_ID, write_run


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    monkeypatch.setenv("HIVE_RUNS_DIR", str(runs_dir))
    write_run(runs_dir)
    return runs_dir


def test_exporting_again_over_a_half_labelled_file_is_refused_and_the_labels_stay(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = tmp_path / "labels.jsonl"
    assert main(["audit", RUN_ID, "--export-labels", str(labels), "--near", "3"]) == 0
    rows = [json.loads(line) for line in labels.read_text().splitlines()]
    rows[0]["label"], rows[2]["label"] = True, "finding"
    labels.write_text("".join(json.dumps(row) + "\n" for row in rows))
    labelled = labels.read_bytes()
    capsys.readouterr()

    assert main(["audit", RUN_ID, "--export-labels", str(labels), "--near", "10"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--export-labels {labels} holds 2 labels a person gave" in err
    assert labels.read_bytes() == labelled


def test_exporting_over_a_file_that_is_no_template_is_refused(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("# my notes on this run\n")
    assert main(["audit", RUN_ID, "--export-labels", str(notes)]) == 2
    assert "exists and is not a label template" in capsys.readouterr().err
    assert notes.read_text() == "# my notes on this run\n"


def test_an_unlabelled_template_or_an_empty_file_is_written_over(runs: Path, tmp_path: Path) -> None:
    template = tmp_path / "to-label.jsonl"
    assert main(["audit", RUN_ID, "--export-labels", str(template), "--near", "2"]) == 0
    assert main(["audit", RUN_ID, "--export-labels", str(template), "--near", "4"]) == 0
    assert len(template.read_text().splitlines()) == 4
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    assert main(["audit", RUN_ID, "--export-labels", str(empty), "--near", "1"]) == 0
    assert len(empty.read_text().splitlines()) == 1
