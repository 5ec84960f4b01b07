"""``hive tail`` and ``hive audit``: watching a run's board, and auditing every gate decision afterwards.

The work is in :mod:`hive.observe`, imported inside each command so that ``hive --help`` stays light.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import orjson
import typer

from hive.cli.app import app
from hive.cli.output import JsonOption, RunsDirOption, print_json
from hive.errors import UsageError
from hive.kinds import NOTE_KINDS
from hive.runs import RunPaths, list_run_dirs, resolve_run, runs_dir_from
from hive.wording import plural

RunArgument = typer.Argument("latest", help="Run id, unique prefix, path, or 'latest'.")


@app.command("tail")
def tail_command(
    run: str = RunArgument,
    runs_dir: Path | None = RunsDirOption,
    follow: bool | None = typer.Option(
        None, "--follow/--no-follow", help="Keep printing as the board grows (default: while the run runs).",
        show_default=False,
    ),
    bees: list[str] = typer.Option([], "--bee", help="Only what concerns this bee (repeatable)."),
    kinds: list[str] = typer.Option([], "--kind", help=f"Only notes of this kind: {', '.join(NOTE_KINDS)}."),
    gates: bool = typer.Option(False, "--gates", help="Interleave the gate decisions."),
    as_json: bool = typer.Option(False, "--json", help="Print the raw records, one JSON object per line."),
) -> None:
    """Print a run's board as it grows: notes, deliveries, relations, corrections, disputes."""
    from hive.observe.tail import TailFilter, TailPrinter, tail_run, tail_target, wait_for_first_run

    unknown = sorted(set(kinds) - set(NOTE_KINDS))
    if unknown:
        raise UsageError(f"unknown note kind {unknown[0]!r}; choose from {', '.join(NOTE_KINDS)}")
    where = runs_dir_from(runs_dir)
    printer = TailPrinter(TailFilter(frozenset(bees), frozenset(kinds)), as_json=as_json)

    async def tail() -> None:
        if run == "latest" and follow is not False and not list_run_dirs(where):
            # Started in another terminal before `hive start`: follow the run it is about to make.
            print(f"hive: no run in {str(where)!r} yet; waiting for one to start (Ctrl-C to stop)", file=sys.stderr)
            paths = await wait_for_first_run(where)
        else:
            paths = tail_target(where, run)
        await tail_run(paths, printer, sys.stdout, follow=follow, gates=gates)

    asyncio.run(tail())


@app.command("audit")
def audit_command(
    run: str = RunArgument,
    runs_dir: Path | None = RunsDirOption,
    gate: str | None = typer.Option(None, "--gate", help="Only this gate: publish, deliver, relate, a rule."),
    bee: str | None = typer.Option(None, "--bee", help="Only what concerns this bee."),
    near: int | None = typer.Option(
        None, "--near", min=0, help="How many near-threshold decisions to show (default 10; 50 exported).",
        show_default=False,
    ),
    labels: Path | None = typer.Option(
        None, "--labels", help="JSONL of human labels {decision, label}: accuracy and calibration."
    ),
    export_labels: Path | None = typer.Option(
        None, "--export-labels", help="Write the near-threshold decisions to FILE, as a template to label."
    ),
    as_json: bool = JsonOption,
) -> None:
    """Audit a run: the funnel, every gate's decisions, disputes, bees, and where to look first."""
    from hive.observe.audit import DEFAULT_NEAR, EXPORT_NEAR, audit_run, format_audit, label_template

    paths = resolve_run(runs_dir_from(runs_dir), run)
    if export_labels is not None:
        from hive.observe.labels import refuse_overwriting

        _refuse_run_records(export_labels, paths)
        refuse_overwriting(export_labels)
    report = audit_run(paths, gate=gate, bee=bee, near=None, labels=labels)
    if export_labels is not None:
        template = label_template(report.near_threshold[: EXPORT_NEAR if near is None else near])
        _write_lines(export_labels, template)
        print(f"hive: wrote {plural(len(template), 'decision')} to label to {export_labels}", file=sys.stderr)
    shown = report.near_threshold[: DEFAULT_NEAR if near is None else near]
    report = report.model_copy(update={"near_threshold": shown})
    if as_json:
        print_json(report.model_dump(mode="json"))
    else:
        typer.echo("\n".join(format_audit(report)))


def _refuse_run_records(path: Path, paths: RunPaths) -> None:
    """A template written over the run's own records (a slip of the tab key) would destroy what it audits."""
    target = path.resolve()
    records = {p.resolve() for p in (paths.run_json, paths.board, paths.gate, paths.answer)}
    if target in records or target.is_relative_to((paths.dir / "bees").resolve()):
        raise UsageError(f"--export-labels {path} would overwrite run {paths.id}'s own records; write it elsewhere")


def _write_lines(path: Path, rows: list[dict[str, Any]]) -> None:
    try:
        path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror}") from e
