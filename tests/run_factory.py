"""Build run directories on disk the way a finished or crashed coordinator leaves them."""

from __future__ import annotations

from pathlib import Path

from hive.records import BeeInfo, BoardRecord, RunInfo, RunStatus
from hive.runs import RunPaths
from hive.store import JsonlWriter, write_json_atomic


def make_run(
    runs_dir: Path,
    run_id: str,
    *,
    problem: str = "Why is the build slow?",
    status: RunStatus = "finished",
    started_at: str = "2026-11-30T03:00:00.000Z",
    ended_at: str | None = "2026-11-30T03:02:05.000Z",
    bees: int = 2,
    pid: int | None = None,
    board: list[BoardRecord] | None = None,
    answer: str | None = None,
) -> RunPaths:
    """Write ``runs_dir/run_id`` with its run.json, board.jsonl and, if given, answer.md."""
    paths = RunPaths(runs_dir / run_id)
    paths.dir.mkdir(parents=True)
    info = RunInfo(
        id=run_id,
        problem=problem,
        repo="/src/project",
        bees=[BeeInfo(id=f"bee-{n}", angle=f"angle {n}") for n in range(1, bees + 1)],
        started_at=started_at,
        ended_at=ended_at,
        status=status,
        pid=pid,
    )
    write_json_atomic(paths.run_json, info)
    with JsonlWriter(paths.board) as writer:
        for record in board or []:
            writer.append(record)
    if answer is not None:
        paths.answer.write_text(answer, encoding="utf-8")
    return paths
