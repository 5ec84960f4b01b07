"""``hive start`` and ``hive demo``: run a hive."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import typer

from hive.cli.app import app
from hive.cli.output import RunsDirOption, print_json
from hive.errors import UsageError
from hive.wording import plural

_NO_MODEL = (
    "no model: pass --model provider:model (e.g. openai:gpt-4.1-mini), set HIVE_MODEL, or pin one in the role; "
    "'hive demo' runs a hive offline with no key"
)
_RACE_NEEDS_A_TIER = (
    "hive: note: --race asks the judge whether a note answers the problem; the local tier cannot tell, so add "
    "a tier that can (e.g. --judge local,llm:openai:gpt-4.1-mini) or the hive will not stop early"
)


@app.command("start")
def start_command(
    problem: str = typer.Argument(..., help="What the bees should find out."),
    repo: Path = typer.Option(Path("."), "--repo", help="The repository to investigate (read-only)."),
    bees: int | None = typer.Option(
        None, "--bees", help="Number of investigators, 2–6 (default: the angles given, else 3)."
    ),
    angle: list[str] = typer.Option([], "--angle", help="An angle for one bee (repeatable); skips planning."),
    model: str | None = typer.Option(None, "--model", envvar="HIVE_MODEL", help="provider:model for the bees."),
    judge: str = typer.Option("local", "--judge", envvar="HIVE_JUDGE", help="Judge tiers, cheapest first."),
    gate_mode: str | None = typer.Option(None, "--gate-mode", help="e.g. publish=shadow,deliver=active"),
    role: str = typer.Option("investigator", "--role", help="Role file for the investigators."),
    time_limit: float | None = typer.Option(
        None, "--time-limit", help="Seconds per bee before it must report (default: the role's, or 600)."
    ),
    deadline: float | None = typer.Option(None, "--deadline", help="Seconds for the whole run."),
    dispute_timeout: float = typer.Option(60.0, "--dispute-timeout", help="Seconds before a verifier is spawned."),
    max_verifiers: int = typer.Option(2, "--max-verifiers", help="Verifier bees allowed per run."),
    delivery_cap: int = typer.Option(10, "--delivery-cap", help="Plain notes delivered per bee."),
    max_steps: int | None = typer.Option(None, "--max-steps", help="Model calls per bee (default: the role's, or 40)."),
    grace: float = typer.Option(90.0, "--grace", help="Seconds a bee gets to report after a wrap-up."),
    stall_timeout: float = typer.Option(
        300.0, "--stall-timeout", help="Seconds a bee may stay silent before it is asked to wrap up (watchdog)."
    ),
    runs_dir: Path | None = RunsDirOption,
    unsafe_bash: bool = typer.Option(False, "--unsafe-bash", help="Run bash without the bubblewrap sandbox."),
    race: bool = typer.Option(
        False, "--race", help="Stop every bee once the judge is near-certain a note answers the problem."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the final summary as JSON."),
    plain: bool = typer.Option(False, "--plain", help="Plain timestamped lines instead of the live view."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the answer."),
) -> int:
    """Start a hive on PROBLEM and print its answer."""
    from hive.config import load_config
    from hive.coordinator.options import StartOptions, check_bee_count, check_positive, check_problem, check_repo
    from hive.coordinator.options import check_runs_dir as check_runs
    from hive.judge.modes import gate_modes
    from hive.judge.tiers import parse_tiers, resolve_tier_spec
    from hive.providers.registry import check_model_spec, resolve_spec
    from hive.roles import MAX_COUNT, load_role
    from hive.runs import runs_dir_from

    text = check_problem(problem)
    angles = tuple(a.strip() for a in angle)
    n = check_bee_count(bees, angles)
    repo_path = check_repo(repo)
    runs = check_runs(runs_dir_from(runs_dir))
    for name, value in (("--time-limit", time_limit), ("--deadline", deadline), ("--grace", grace),
                        ("--dispute-timeout", dispute_timeout), ("--stall-timeout", stall_timeout),
                        ("--max-steps", max_steps)):
        check_positive(name, value)
    if max_verifiers < 0 or delivery_cap < 0:
        raise UsageError("--max-verifiers and --delivery-cap must not be negative")
    counts = (("--max-steps", max_steps), ("--max-verifiers", max_verifiers), ("--delivery-cap", delivery_cap))
    for name, count in counts:
        if count is not None and count > MAX_COUNT:  # a count past this fits no record (nor any run)
            raise UsageError(f"{name} must be at most {MAX_COUNT}, not {count}")
    investigator = load_role(role, cwd=repo_path)
    verifier = load_role("verifier", cwd=repo_path)
    model = model or investigator.model  # a role that pins its model needs no --model
    if not model:
        raise UsageError(_NO_MODEL)
    for spec in dict.fromkeys(s for s in (model, investigator.model, verifier.model) if s):
        check_model_spec(spec)  # a missing key or script is refused now, not in a bee minutes later
    model = resolve_spec(model)
    _check_model_timeout(stall_timeout, [model, investigator.model, verifier.model])
    tier_specs = [resolve_tier_spec(spec) for spec in parse_tiers(judge)]  # resumable from anywhere
    if race and all(spec == "local" for spec in tier_specs):
        typer.echo(_RACE_NEEDS_A_TIER, err=True)
    modes = gate_modes(gate_mode, config=load_config().gate_modes)
    opts = StartOptions(
        problem=text, repo=repo_path, model=model, bees=n, angles=angles, judge=tuple(tier_specs),
        gate_modes=modes, role=role, time_limit=time_limit or investigator.time_limit or 600.0, deadline=deadline,
        dispute_timeout=dispute_timeout, max_verifiers=max_verifiers, runs_dir=runs, unsafe_bash=unsafe_bash,
        delivery_cap=delivery_cap, grace=grace, stall_timeout=stall_timeout,
        max_steps=max_steps or investigator.max_steps, race=race,
    )
    return run_hive(opts, as_json=as_json, mode=_view_mode(plain, quiet))


@app.command("resume")
def resume_command(
    run: str = typer.Argument("latest", help="Run id, unique prefix, path, or 'latest'."),
    runs_dir: Path | None = RunsDirOption,
    deadline: float | None = typer.Option(
        None, "--deadline", help="Seconds for the rest of the run (default: the run's own, counted afresh)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the final summary as JSON."),
    plain: bool = typer.Option(False, "--plain", help="Plain timestamped lines instead of the live view."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the answer."),
) -> int:
    """Go on with a run that was interrupted, killed or failed: same directory, same board, same bees."""
    from hive.coordinator.options import check_positive, check_repo
    from hive.coordinator.resume import check_resumable, load_earlier, resume_options
    from hive.coordinator.run import git_head
    from hive.judge.tiers import parse_tiers
    from hive.providers.registry import check_model_spec
    from hive.roles import load_role
    from hive.runs import resolve_run, runs_dir_from

    check_positive("--deadline", deadline)
    paths = resolve_run(runs_dir_from(runs_dir), run)
    with _resume_lock(paths.dir):
        info = check_resumable(paths)
        opts = resume_options(info, runs_dir_from(runs_dir), deadline)
        check_repo(opts.repo)
        load_role(opts.role, cwd=opts.repo)
        verifier = load_role("verifier", cwd=opts.repo)
        for spec in dict.fromkeys(s for s in (opts.model, verifier.model, *(b.model for b in info.bees)) if s):
            check_model_spec(spec)
        _check_model_timeout(opts.stall_timeout, [opts.model, verifier.model, *(b.model for b in info.bees)],
                             resuming=True)
        parse_tiers(",".join(opts.judge))
        earlier = load_earlier(paths, info)
        for warning in earlier.warnings:
            typer.echo(f"hive: warning: {warning}", err=True)
        head = git_head(opts.repo)
        if info.repo_head and head != info.repo_head:
            typer.echo(f"hive: note: {opts.repo} has moved from commit {info.repo_head[:12]} to "
                       f"{(head or 'none')[:12]} since the run started; its notes were made on the first", err=True)
        restarted = earlier.restarted()
        intro = (f"hive: resuming run {info.id}: starting {', '.join(restarted) or 'no bee'} again"
                 f" on {plural(len(earlier.board), 'board record')}")
        return run_hive(opts, as_json=as_json, mode=_view_mode(plain, quiet), intro=intro, earlier=earlier)


def _check_model_timeout(stall_timeout: float, specs: Sequence[str | None], *, resuming: bool = False) -> None:
    """Refuse a bad ``HIVE_MODEL_TIMEOUT`` in one line; warn when the watchdog would cut a slow reply short (only
    where a model of the run makes HTTP requests: a script model has no reply to wait for)."""
    from hive.providers.registry import MODEL_TIMEOUT_ENV, model_timeout, parse_model_spec

    timeout = model_timeout()
    over_http = any(spec and parse_model_spec(spec).provider != "script" for spec in specs)
    if timeout is not None and timeout >= stall_timeout and over_http:
        # A resumed run keeps the --stall-timeout it was started with: hive resume has no such option to raise.
        limit, advice = ((f"the run's --stall-timeout ({stall_timeout:g} s, kept from hive start)",
                          f"lower {MODEL_TIMEOUT_ENV}") if resuming
                         else (f"--stall-timeout ({stall_timeout:g} s)", "raise --stall-timeout"))
        typer.echo(f"hive: warning: {MODEL_TIMEOUT_ENV} ({timeout:g} s) is not below {limit}: the watchdog wraps up "
                   f"a bee still waiting for its model's reply; {advice}", err=True)


@contextlib.contextmanager
def _resume_lock(run_dir: Path) -> Iterator[None]:
    """Only one ``hive resume`` of a run at a time; the kernel drops the lock if the process dies."""
    import fcntl

    try:
        fd = os.open(run_dir / ".resume.lock", os.O_CREAT | os.O_RDWR, 0o644)
    except OSError as e:
        raise UsageError(f"cannot resume {run_dir}: {e.strerror}") from e
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise UsageError(f"run {run_dir.name} is already being resumed by another process") from None
        yield
    finally:
        os.close(fd)


def _view_mode(plain: bool, quiet: bool) -> str:
    if quiet:
        return "quiet"
    if plain or not sys.stdout.isatty():
        return "plain"
    return "rich"


def run_hive(opts: Any, *, as_json: bool, mode: str, intro: str | None = None, earlier: Any = None) -> int:
    """Build the judge, run the coordinator with a view, print the answer or the summary."""
    from hive.coordinator import Coordinator
    from hive.judge.tiers import build_tiers
    from hive.observe.live import open_view
    from hive.observe.stdout import discard_stdout
    from hive.runs import load_run_info

    tiers = build_tiers(list(opts.judge))
    coordinator = Coordinator(opts, tiers=tiers, earlier=earlier)
    views: list[Any] = []

    def created(paths: Any) -> None:
        out = sys.stderr if as_json or mode == "quiet" else sys.stdout
        try:
            if intro:
                print(intro, file=out)
            print(f"hive: run directory {paths.dir}", file=out, flush=True)
        except BrokenPipeError:  # nobody reads (`| true`): the run goes on unseen, as with the live view
            discard_stdout()
        # run_dir: a resumed run's view counts what its board already holds, not only what comes next.
        view = open_view("quiet" if as_json else mode, load_run_info(paths), run_dir=paths)  # type: ignore[arg-type]
        views.append(view)
        coordinator.view = view

    coordinator.on_created = created
    try:
        result = asyncio.run(coordinator.run())
    finally:
        for view in views:
            view.close()
    try:
        if as_json:
            print_json(summary(result))
        else:
            from hive.observe.reading import printable  # models wrote most of it: it must not drive the terminal

            print(printable(result.answer), flush=True)
    except BrokenPipeError:  # the reader went away: the run has ended as it would have, answer.md holds it
        discard_stdout()
    if result.info.status == "interrupted":
        print(f"hive: interrupted; 'hive resume {result.info.id}' goes on with this run", file=sys.stderr)
    elif result.info.status == "failed":
        print(f"hive: error: run {result.info.id} failed: {result.info.exit_reason}; "
              f"'hive resume {result.info.id}' starts its bees again", file=sys.stderr)
    return result.exit_code


def summary(result: Any) -> dict[str, Any]:
    from hive.runs import duration_seconds

    info, stats = result.info, result.stats
    return {
        "run": info.id,
        "dir": str(result.paths.dir),
        "status": info.status,
        "exit_reason": info.exit_reason,
        "answer_file": str(result.paths.answer),
        "answer_from": info.settings.get("answer_from"),
        "angles_from": info.settings.get("angles_from"),
        "bees": [b.model_dump(mode="json", exclude_none=True) for b in info.bees],
        # The coordinator's own calls (planning, the answer) cost money too: without them the bees' figures
        # above would read as the run's whole bill.
        "coordinator": info.coordinator.model_dump(mode="json", exclude_none=True) if info.coordinator else None,
        "utterances": stats.utterances,
        "notes": stats.notes,
        "deliveries": stats.deliveries,
        "corrections": stats.corrections,
        "disputes": stats.disputes,
        "verifiers": sum(b.id.startswith("verify-") for b in info.bees),
        "decisions": stats.decisions,
        "duration_s": duration_seconds(info),
        "resumed_at": info.resumed_at or [],
    }


def examples_dir() -> Path:
    """The shipped examples: beside the package in a checkout, inside it in a wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "examples", here / "_examples"):
        if candidate.is_dir():
            return candidate
    raise UsageError("the examples directory is missing from this installation")


@app.command("demo")
def demo_command(
    runs_dir: Path | None = RunsDirOption,
    dispute_timeout: float = typer.Option(4.0, "--dispute-timeout", help="Seconds before a verifier is spawned."),
    as_json: bool = typer.Option(False, "--json", help="Print the final summary as JSON."),
    plain: bool = typer.Option(False, "--plain", help="Plain timestamped lines instead of the live view."),
    quiet: bool = typer.Option(False, "--quiet", help="Print only the answer."),
) -> int:
    """Run a complete hive offline on the shipped example: real processes and tools, scripted bees."""
    from hive.coordinator.options import StartOptions, check_positive, check_runs_dir
    from hive.runs import runs_dir_from

    check_positive("--dispute-timeout", dispute_timeout)
    example = examples_dir() / "nightly-export"
    script, judge_rules = example / "hive-script.json", example / "hive-judge.json"
    runs = check_runs_dir(runs_dir_from(runs_dir))
    opts = StartOptions(
        problem="Why does the nightly export drop rows?",
        repo=example / "repo",
        model=f"script:{script}",
        bees=3,
        judge=("local", f"script:{judge_rules}"),
        dispute_timeout=dispute_timeout,
        runs_dir=runs,
        time_limit=120.0,
        grace=10.0,
    )
    intro = (
        "hive demo: a real hive, offline: the real coordinator, real bee processes and real read-only tools on "
        f"{opts.repo}, gated by the embedded local judge.\n"
        f"The bees' words are scripted ({script.name}), so no API key is needed; which relation two related notes "
        f"have, which the local judge leaves to the next tier by design, goes to a scripted judge tier "
        f"({judge_rules.name}).\n"
        f"A dispute spawns a verifier after {dispute_timeout:g} s here (60 s by default)."
    )
    code = run_hive(opts, as_json=as_json, mode=_view_mode(plain, quiet), intro=intro)
    if not as_json and not quiet:
        _print_audit_summary(runs)
    return code


def _print_audit_summary(runs: Path) -> None:
    from hive.cli.app import main

    print("\n" + "─" * 60 + "\n$ hive audit latest\n")
    main(["audit", "latest", "--runs-dir", str(runs)])
