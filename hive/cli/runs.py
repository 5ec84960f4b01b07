"""``hive ls``, ``hive show`` and ``hive schema``: reading what runs left behind."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from hive.cli.app import app
from hive.cli.output import JsonOption, RunsDirOption, clip, human_duration, print_json
from hive.errors import StoreError, UsageError
from hive.runs import (
    RunPaths,
    duration_seconds,
    effective_status,
    last_sign_of_life,
    list_run_dirs,
    load_run_info,
    resolve_run,
    runs_dir_from,
)

if TYPE_CHECKING:
    from hive.records import BoardRecord


@app.command("ls")
def ls_command(runs_dir: Path | None = RunsDirOption, as_json: bool = JsonOption) -> None:
    """List runs with their status, problem, bees, duration and notes."""
    from hive.records import Note

    rows: list[dict[str, Any]] = []
    for paths in list_run_dirs(runs_dir_from(runs_dir)):
        row: dict[str, Any] = {"id": paths.id, "status": "unreadable", "problem": None, "bees": 0,
                               "duration_s": None, "notes": 0, "started_at": None, "path": str(paths.dir)}
        try:
            info = load_run_info(paths)
            row.update(id=info.id, status=effective_status(info), problem=info.problem, bees=len(info.bees),
                       duration_s=duration_seconds(info, last_seen=last_sign_of_life(paths)),
                       started_at=info.started_at)
            row["notes"] = sum(isinstance(r, Note) for r in _read_board(paths))
        except UsageError as e:
            # One broken run must not hide the others: it is listed with what could be read, and why not more.
            row.update(status="unreadable", error=str(e))
        rows.append(row)
    if as_json:
        print_json(rows)
        return
    if not rows:
        typer.echo(f"no runs in {str(runs_dir_from(runs_dir))!r}")
        return
    from hive.observe.reading import printable  # a problem is the user's text: it must not drive the terminal

    typer.echo(f"{'RUN':<22} {'STATUS':<12} {'BEES':>4} {'TIME':>7} {'NOTES':>5}  PROBLEM")
    for row in rows:
        problem = printable(row["error"] if "error" in row else clip(row["problem"], 60))
        typer.echo(
            f"{printable(row['id']):<22} {row['status']:<12} {row['bees']:>4} "
            f"{human_duration(row['duration_s']):>7} {row['notes']:>5}  {problem}"
        )


@app.command("show")
def show_command(
    run: str = typer.Argument("latest", help="Run id, unique prefix, path, or 'latest'."),
    runs_dir: Path | None = RunsDirOption,
    as_json: bool = JsonOption,
) -> None:
    """Show a run's answer and its standing board."""
    paths = resolve_run(runs_dir_from(runs_dir), run)
    info = load_run_info(paths)
    from hive.board import fold

    state = fold(_read_board(paths))
    answer = _read_answer(paths)
    contested = state.contested_ids()
    if as_json:
        print_json({
            "run": info.model_dump(mode="json", exclude_none=True),
            "status": effective_status(info),
            "answer": answer,
            "standing": [n.model_dump(mode="json", exclude_none=True) for n in state.standing()],
            "superseded": state.superseded,
            "contested": [list(pair) for pair in state.contested()],
        })
        return
    from hive.observe.reading import printable  # what a model or a user wrote must not drive the terminal
    from hive.wording import plural

    status = effective_status(info)
    resumed = f" · resumed {len(info.resumed_at)}×" if info.resumed_at else ""
    typer.echo(f"run {info.id} · {status}{resumed} · {printable(info.problem)}")
    if status in ("interrupted", "failed"):
        typer.echo(f"(it stopped before the end: 'hive resume {info.id}' goes on with it)")
    typer.echo("")
    typer.echo(printable(answer.rstrip()) if answer else "(no answer.md yet)")
    typer.echo("")
    standing = state.standing()
    typer.echo(f"Standing board: {plural(len(standing), 'note')}, {len(state.superseded)} corrected")
    for note in standing:
        marks = []
        if note.id in contested:
            marks.append("in dispute")
        if state.confirmations(note.id):
            marks.append(f"confirmed by {', '.join(sorted(state.confirmed_by[note.id]))}")
        suffix = f" ({'; '.join(marks)})" if marks else ""
        typer.echo(f"- [{note.kind} {note.score:.2f}] {note.bee}{suffix}: {printable(note.text)}")


def _read_answer(paths: RunPaths) -> str | None:
    """The run's answer.md, ``None`` until it is written; an unreadable one is bad input, in one line."""
    if not paths.answer.is_file():
        return None
    try:
        return paths.answer.read_text(encoding="utf-8", errors="replace")
    except OSError as e:
        raise UsageError(f"cannot read {paths.answer}: {e.strerror}") from e


def _read_board(paths: RunPaths) -> list[BoardRecord]:
    """The run's board records; corrupt lines are skipped with a warning, an unreadable file is bad input."""
    from hive.records import BOARD_ADAPTER
    from hive.store import read_all

    try:
        records, _ = read_all(paths.board, BOARD_ADAPTER)
    except StoreError as e:
        raise UsageError(str(e)) from e
    return records


@app.command("schema")
def schema_command(
    name: str | None = typer.Argument(None, help="A file or channel, e.g. board.jsonl. Default: all."),
    as_json: bool = typer.Option(False, "--json", help="The same output: schemas are JSON already."),
) -> None:
    """Print the JSON Schema of each record type."""
    del as_json  # accepted so that every reporting command takes --json
    from hive.records import SCHEMAS, json_schema

    if name is None:
        print_json({key: json_schema(key) for key in SCHEMAS})
        return
    if name not in SCHEMAS:
        raise UsageError(f"unknown record type {name!r}; choose from {', '.join(SCHEMAS)}")
    print_json(json_schema(name))
