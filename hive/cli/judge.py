"""``hive judge ask`` (one item through one gate) and ``hive judge eval`` (a labelled file through a gate)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import typer

from hive.cli.app import app
from hive.cli.output import JsonOption, clip, print_json
from hive.errors import UsageError
from hive.kinds import NOTE_KINDS
from hive.wording import plural

if TYPE_CHECKING:
    from hive.records import GateDecision, Note

T = TypeVar("T")

judge_app = typer.Typer(help="Ask the judge about one item, or measure it on a labelled file.", no_args_is_help=True)
ask_app = typer.Typer(help="Ask one gate about one item and show the answers.", no_args_is_help=True)
judge_app.add_typer(ask_app, name="ask")
app.add_typer(judge_app, name="judge")

JudgeOption = typer.Option(
    "local",
    "--judge",
    envvar="HIVE_JUDGE",
    help="Tiers, cheapest first: local, llm:<provider>:<model>, http:<url>, script:<file>.",
)
GoalOption = typer.Option("", "--goal", help="The problem the bees work on.")
KindOption = typer.Option("finding", "--kind", help="The note's kind.")
NoteTextOption = typer.Option(..., "--note", help="The note's text.")


def _with_gates(spec: str, goal: str, use: Callable[[Any], Awaitable[T]], *, preload: bool = True) -> T:
    """Build the judge from ``spec``, run ``use(gates)``, and close the judge whatever happens. ``preload=False``
    leaves the loading to ``use``: ``eval`` times it itself and reports it as ``load_ms``."""
    from hive.gates import Gates
    from hive.judge.engine import Judge
    from hive.judge.tiers import build_tiers, parse_tiers

    _utf8("--goal", goal)
    tiers = build_tiers(parse_tiers(spec))

    async def run() -> T:
        judge = Judge(tiers)
        try:
            if preload:
                await judge.load()  # the latency shown is the decision's, as in a run, not the model's loading
            return await use(Gates(judge, goal=goal))
        finally:
            await judge.aclose()

    return asyncio.run(run())


def _utf8(option: str, value: str) -> str:
    """A command-line text the judge can read: bytes that are not UTF-8 (say, a Latin-1 file pasted in) reach
    Python as lone surrogates, which neither the model's tokenizer nor the JSON row can take."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{option} is not UTF-8 text") from None
    return value


def _text(option: str, value: str) -> str:
    """A text the gate reads; an empty one is a usage error, not a question."""
    _utf8(option, value)
    if not value.strip():
        raise UsageError(f"{option} is empty: give the text to ask about")
    return value


def _note(text: str, kind: str, *, id: str = "n-1", bee: str = "bee-1", option: str = "--kind",
          text_option: str = "--note") -> Note:
    """A board note to ask a gate about; a ``kind`` that is not a note kind is a usage error."""
    from hive.records import Note

    _text(text_option, text)
    if kind not in NOTE_KINDS:
        raise UsageError(f"{option} {kind!r} is not one of {', '.join(NOTE_KINDS)}")
    return Note(id=id, bee=bee, kind=kind, text=text, score=1.0)


def _show(row: GateDecision | None, summary: dict[str, Any], as_json: bool) -> None:
    import orjson

    from hive.store import dumps

    decided_by = _decided_by(row)
    if row is not None:
        summary["outcome"] = row.outcome  # a rule's outcome (`duplicate`) says more than the gate's yes or no
    if as_json:
        asked = row.answers if row else {}
        answers = {name: answer.model_dump(mode="json", exclude_none=True) for name, answer in asked.items()}
        print_json(
            summary
            | {"answers": answers, "decided_by": decided_by,
               "decision": orjson.loads(dumps(row)) if row else None}  # the row exactly as gate.jsonl holds it
        )
        return
    if row is None:
        typer.echo(f"{summary['gate']}: no decision recorded")
        return
    from hive.observe.reading import dollars
    facts = [
        f"{key} {value:.2f}" if isinstance(value, float)
        else f"{key} {'yes' if value else 'no'}" if isinstance(value, bool)  # not Python's True/False
        else f"{key} {value}"
        for key, value in summary.items()
        if key not in ("gate", "outcome", "publish", "deliver", "relation", "answered") and value is not None
    ]
    reason = f" ({row.reason})" if row.reason else ""
    typer.echo(
        f"{row.gate}: {row.outcome} · {' · '.join(facts)} · source {row.source}{reason} · decided by {decided_by}"
    )
    for name, answer in row.answers.items():
        if answer.type == "choice" and answer.probs:
            ranked = sorted(answer.probs.items(), key=lambda item: -item[1])
            value = ", ".join(f"{option} {p:.2f}" for option, p in ranked)
        elif answer.type == "score":
            value = f"level {answer.level:.2f}" if answer.level is not None else "-"
        else:
            value = f"p(yes) {answer.p:.2f}" if answer.p is not None else "-"
        stated = " (verbalized)" if answer.verbalized else ""
        typer.echo(f"  {name:<9} {answer.zone or '-':<7} {value}{stated}  [{answer.tier}]")
    for call in row.tiers:
        outcome = call.error or f"kept {', '.join(call.kept) or 'nothing'}"
        typer.echo(
            f"  tier {call.tier}: asked {', '.join(call.asked)} · {outcome} · {call.latency_ms:.1f} ms"
            + (f" · {call.tokens} tokens" if call.tokens else "")
            + (f" · {dollars(call.cost_usd)}" if call.cost_usd is not None else "")
        )


def _decided_by(row: GateDecision | None) -> str:
    if row is None:
        return "nothing"
    if row.source == "rule":
        return "rule"
    if row.source in ("fallback", "shadow"):
        return "fallback"
    answering = {answer.tier for answer in row.answers.values()}
    tiers = [call.tier for call in row.tiers if call.tier in answering]  # in cascade order, cheapest first
    return "+".join(tiers) or "judge"


@ask_app.command("publish")
def ask_publish(
    note: str = typer.Option(..., "--note", help="The bee's utterance."),
    goal: str = GoalOption,
    focus: str = typer.Option("", "--focus", help="The speaking bee's angle."),
    bee: str = typer.Option("bee-1", "--bee", help="The speaking bee."),
    judge: str = JudgeOption,
    as_json: bool = JsonOption,
) -> None:
    """Would this utterance be published, and as which kind?"""
    from hive.records import Utterance

    utterance = Utterance(bee=_utf8("--bee", bee), seq=1, text=_text("--note", note))
    _utf8("--focus", focus)
    result = _with_gates(judge, goal, lambda gates: gates.publish(utterance, focus=focus, board=[]))
    _show(
        result.decision,
        {
            "gate": "publish",
            "outcome": "publish" if result.publish else "withhold",
            "publish": result.publish,
            "kind": result.kind,
            "score": result.score,
        },
        as_json,
    )


@ask_app.command("deliver")
def ask_deliver(
    note: str = NoteTextOption,
    focus: str = typer.Option(..., "--focus", help="The receiving bee's angle."),
    kind: str = KindOption,
    goal: str = GoalOption,
    judge: str = JudgeOption,
    as_json: bool = JsonOption,
) -> None:
    """Would this note be delivered to a bee working on FOCUS?"""
    item = _note(note, kind)
    _text("--focus", focus)
    result = _with_gates(judge, goal, lambda gates: gates.deliver(item, to_bee="bee-2", focus=focus))
    _show(
        result.decision,
        {
            "gate": "deliver",
            "outcome": "deliver" if result.deliver else "skip",
            "deliver": result.deliver,
            "score": result.score,
            "by_rule": result.by_rule,
        },
        as_json,
    )


@ask_app.command("relate")
def ask_relate(
    earlier: str = typer.Option(..., "--earlier", help="The earlier note's text."),
    later: str = typer.Option(..., "--later", help="The later note's text."),
    same_bee: bool = typer.Option(False, "--same-bee", help="Both notes come from one bee."),
    earlier_kind: str = typer.Option("finding", "--earlier-kind", help="The earlier note's kind."),
    later_kind: str = typer.Option("finding", "--later-kind", help="The later note's kind."),
    goal: str = GoalOption,
    judge: str = JudgeOption,
    as_json: bool = JsonOption,
) -> None:
    """What does the later note say about the earlier one?"""
    first = _note(earlier, earlier_kind, option="--earlier-kind", text_option="--earlier")
    second = _note(later, later_kind, id="n-2", bee="bee-1" if same_bee else "bee-2", option="--later-kind",
                   text_option="--later")
    result = _with_gates(judge, goal, lambda gates: gates.relate(first, second))
    _show(
        result.decision,
        {
            "gate": "relate",
            "outcome": result.relation or "none",
            "relation": result.relation,
            "score": result.score,
            "same_bee": same_bee,
        },
        as_json,
    )


@ask_app.command("answer")
def ask_answer(
    note: str = NoteTextOption,
    kind: str = KindOption,
    goal: str = GoalOption,
    judge: str = JudgeOption,
    as_json: bool = JsonOption,
) -> None:
    """Would this note stop a `hive start --race` run, as the answer to GOAL?"""
    item = _note(note, kind)
    result = _with_gates(judge, goal, lambda gates: gates.answer(item))
    _show(
        result.decision,
        {
            "gate": "answer",
            "outcome": "answered" if result.answered else "continue",
            "answered": result.answered,
            "score": result.score,
        },
        as_json,
    )


@judge_app.command("eval")
def eval_command(
    file: Path = typer.Argument(..., help="A JSONL file of labelled items.", show_default=False),
    gate: str = typer.Option(..., "--gate", help="publish, relate or deliver."),
    judge: str = JudgeOption,
    as_json: bool = JsonOption,
) -> None:
    """Measure the judge on labelled items: accuracy, coverage, confident-wrong rate, macro-F1, latency."""
    from hive.judge.evaluate import evaluate, load_items

    items = load_items(file, gate)
    report = _with_gates(judge, "", lambda gates: evaluate(gates, gate, items), preload=False)
    if as_json:
        print_json(report)
        return
    _print_report(report)


def _print_report(report: dict[str, Any]) -> None:
    from hive.observe.reading import dollars

    subject = "kind" if report["gate"] == "publish" else report["gate"]
    typer.echo(f"{report['gate']} · {plural(report['n'], 'item')} · judge {','.join(report['judge'])}")
    typer.echo(
        f"  {subject:<8} accuracy {report['accuracy']:.3f} · coverage {report['coverage']:.3f} · "
        f"confident-wrong {report['confident_wrong']:.3f} · macro-F1 {report['macro_f1']:.3f} · "
        f"right when confident {report['right_when_confident']:.3f}"
    )
    if "news_accuracy" in report:
        typer.echo(
            f"  {'news':<8} accuracy {report['news_accuracy']:.3f} · coverage {report['news_coverage']:.3f}"
            f" · confident-wrong {report['news_confident_wrong']:.3f}"
            f" · right when confident {report['news_right_when_confident']:.3f}"
        )
    if "related_accuracy" in report:
        typer.echo(
            f"  {'related':<8} accuracy {report['related_accuracy']:.3f} · coverage "
            f"{report['related_coverage']:.3f} · confident-wrong {report['related_confident_wrong']:.3f} · "
            f"right when confident {report['related_right_when_confident']:.3f} "
            f"(related vs none) · cross-bee supersedes confidently wrong: {report['cross_bee_supersedes_wrong']}"
        )
    typer.echo(
        f"  latency p50 {report['latency_ms_p50']:.1f} ms · p95 {report['latency_ms_p95']:.1f} ms per item"
        f" (after {report['load_ms']:.0f} ms loading) · {plural(report['tokens'], 'token')}"
        + (f" ({dollars(report['cost_usd'])})" if report["cost_usd"] is not None else "")
        + f" · {plural(report['tier_errors'], 'item')} with a tier error"
    )
    columns = [*report["labels"], *(["unsure"] if any("unsure" in row for row in report["confusion"].values()) else [])]
    width = max(8, *(len(label) for label in columns)) + 1
    typer.echo("  confusion (rows: gold, columns: predicted)")
    typer.echo("  " + " " * width + "".join(f"{clip(label, width - 1):>{width}}" for label in columns))
    for gold in report["labels"]:
        row = report["confusion"].get(gold, {})
        if not row:
            continue
        typer.echo(f"  {gold:<{width}}" + "".join(f"{row.get(label, 0):>{width}}" for label in columns))
