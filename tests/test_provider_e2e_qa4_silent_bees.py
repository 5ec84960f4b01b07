"""A provider that never answers in time: bees cut short before they said anything have not reported, and the
run says so (found by pointing `hive start` at a slow OpenAI-compatible server with `--time-limit` and
`--deadline`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from hive.coordinator import Coordinator
from hive.coordinator.options import StartOptions
from hive.coordinator.run import ended_reason, handed_in
from tests.hive_runs import load_info, ls, make_repo, only_run, publish_rules, report, turn, write_judge, write_script

SILENT = turn("Reading the configuration module before saying anything at all.", ls(), delay=60.0)
"""A model call that takes longer than any budget of these tests."""


class Said:
    """A view that keeps what the coordinator tells the user."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)

    def on_event(self, event: Any) -> None:
        pass

    def bee_started(self, bee: Any) -> None:
        pass

    def bee_finished(self, *bee: Any) -> None:
        pass

    def spent(self, *usage: Any) -> None:
        pass


def options(root: Path, bees: dict[str, list[dict[str, Any]]], **budgets: float) -> StartOptions:
    script = write_script(root, bees)
    judge = write_judge(root, publish_rules())
    return StartOptions(problem="Why does the export drop rows?", repo=make_repo(root), model=f"script:{script}",
                        bees=2, angles=("batching", "config"), judge=(f"script:{judge}",), runs_dir=root / "runs",
                        **budgets)


def test_the_exit_reason_says_every_bee_reported_only_when_every_bee_did() -> None:
    assert ended_reason(["reported", "reported"]) == "every bee reported"
    assert ended_reason(["reported", "cut_short", "failed"]) == "every bee ended: 1 reported, 1 cut short, 1 failed"
    assert handed_in("cut_short", "FOUND: a partial report")
    assert not handed_in("cut_short", " \n")
    assert not handed_in("failed", "FOUND: a partial report")


@pytest.mark.slow
def test_a_deadline_that_passes_before_any_bee_said_anything_fails_the_run(tmp_path: Path) -> None:
    said = Said()
    opts = options(tmp_path, {"bee-1": [SILENT, SILENT], "bee-2": [SILENT, SILENT]}, deadline=1.0, grace=1.0)
    result = asyncio.run(Coordinator(opts, view=said).run())
    assert result.exit_code == 1
    info = load_info(only_run(tmp_path / "runs"))
    assert (info.status, info.exit_reason) == (
        "failed", "no bee reported: bee-1 cut_short (no report), bee-2 cut_short (no report)")
    assert [b.outcome for b in info.bees] == ["cut_short", "cut_short"]
    # The user hears why nothing happens for the length of the grace.
    assert "the run's deadline passed: asking every bee for its report (killed after 1 s)" in said.lines


@pytest.mark.slow
def test_a_bee_cut_short_at_its_time_limit_is_not_counted_as_reported(tmp_path: Path) -> None:
    said = Said()
    opts = options(tmp_path, {"bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch.", ls()),
                                        report()],
                              "bee-2": [SILENT, SILENT]}, time_limit=1.0, grace=1.0)
    result = asyncio.run(Coordinator(opts, view=said).run())
    assert result.exit_code == 0
    info = load_info(only_run(tmp_path / "runs"))
    assert (info.status, info.exit_reason) == ("finished", "every bee ended: 1 reported, 1 cut short")
    assert "bee-2: its time limit passed: asking for its report (killed after 1 s)" in said.lines


def test_the_note_of_a_kill_is_not_a_report() -> None:
    assert not handed_in("cut_short", "(Cut short: killed after the grace period (deadline); nothing reported.)")
    assert handed_in("cut_short", "(Cut short: killed after the grace period (deadline).)\n\nFOUND: a thing")
