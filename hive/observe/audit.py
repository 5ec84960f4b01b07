"""``hive audit``: every figure a person needs to judge a run's gates, computed from its records.

The figures are pure functions of the records (:func:`compute_audit`); :func:`audit_run` only reads the
run directory, tolerating what a crash leaves behind (a torn last line, a corrupt line in the middle: a
warning naming the line, never an exception). How one decision is read (yes / no / unsure, its deciding
probability and bar) is in :mod:`hive.observe.reading`; labels and calibration in :mod:`hive.observe.labels`.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import reduce
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hive.bee.transcript import spent as transcript_spent
from hive.board import BoardState, fold
from hive.errors import StoreError, UsageError
from hive.observe.labels import Label, LabelReport, checked_labels, label_report, load_labels
from hive.observe.reading import (
    NEUTRAL_TIERS,
    asked_the_judge,
    concerns_bee,
    deciding_reading,
    decision_bee,
    dollars,
    printable,
    same_bee,
    verdict_of,
)
from hive.providers.base import add_cost
from hive.records import (
    BOARD_ADAPTER,
    GATES,
    JUDGED_GATES,
    BeeInfo,
    BoardRecord,
    Delivery,
    GateDecision,
    Note,
    RunInfo,
    TranscriptEntry,
    Verifier,
)
from hive.runs import RunPaths, duration_seconds, effective_status, last_sign_of_life, load_run_info
from hive.store import JsonlReader
from hive.wording import plural

log = logging.getLogger("hive.observe")

RULE_GATES: tuple[str, ...] = ("correct", "conflict", "withheld", "verify")
KNOWN_GATES: tuple[str, ...] = JUDGED_GATES + RULE_GATES
DEFAULT_NEAR = 10
"""Near-threshold decisions shown by default."""
EXPORT_NEAR = 50
"""Near-threshold decisions exported to label by default."""


# --------------------------------------------------------------------------- the report


class Figures(BaseModel):
    model_config = ConfigDict(frozen=True)


class Funnel(Figures):
    utterances: int
    """Publish decisions, duplicates included: every utterance gets exactly one."""
    duplicates: int
    judged: int
    """Utterances that reached the publish gate proper (not dropped as duplicates)."""
    withheld: int
    published: int
    """Notes on the board."""
    delivered: int
    """Notes handed to a bee (each note and bee once), by the judge or by rule."""
    delivered_by_judge: int
    delivered_by_rule: int
    capped: int
    """Deliveries the judge was never asked about: the receiving bee had reached its cap."""
    notes_reaching_a_bee: int
    corrections: int
    conflict_notices: int

    def summary(self) -> str:
        """The prior art's one-liner: ``117 judged, 27 published, 16 delivered``."""
        return f"{self.judged} judged, {self.published} published, {self.delivered} delivered"


class GateFigures(Figures):
    decisions: int = 0
    yes: int = 0
    no: int = 0
    unsure: int = 0
    fallback: int = 0
    """Decisions the fallback made (unsure, judge errors, abstentions); reasons in ``fallback_reasons``."""
    by_source: dict[str, int] = Field(default_factory=dict)
    fallback_reasons: dict[str, int] = Field(default_factory=dict)
    outcomes: dict[str, int] = Field(default_factory=dict)
    verdicts: dict[str, int] = Field(default_factory=dict)
    """What the judge's answers meant, also where they were not used (shadow, fallback)."""
    latency_ms_p50: float | None = None
    latency_ms_p95: float | None = None
    tokens: int = 0
    cost_usd: float | None = None
    """What the judge's tokens cost, where a tier's model has a known price."""
    tiers: dict[str, int] = Field(default_factory=dict)
    """Tier → judged decisions whose answers it gave."""
    tier_errors: dict[str, int] = Field(default_factory=dict)
    """``<tier> <error>`` → how often that tier failed that way."""


class RelationFigures(Figures):
    by_type: dict[str, int]
    same_bee: int
    cross_bee: int


class VerifierRun(Figures):
    bee: str
    dispute: str
    notes: list[str]
    outcome: str | None
    reason: str | None


class DisputeFigures(Figures):
    opened: int
    resolved: int
    unsettled: int
    verifiers: int
    verifier_runs: list[VerifierRun]


class BeeFigures(Figures):
    id: str
    role: str
    model: str
    utterances: int
    published: int
    received: int
    """Deliveries to this bee: notes, corrections and conflict notices."""
    reached: int
    """Deliveries of this bee's notes to other bees."""
    tokens: int | None
    cost_usd: float | None
    outcome: str | None
    reason: str | None


class Totals(Figures):
    bee_tokens: int | None
    judge_tokens: int
    coordinator_tokens: int | None = None
    """The coordinator's own model calls: planning the angles and writing the answer."""
    cost_usd: float | None
    """What every call with a known price cost; ``None`` when none had one."""
    unpriced_tokens: int = 0
    """Tokens of calls without a known price (local or scripted models, a model missing from the price table),
    which ``cost_usd`` cannot include: when both are there, the cost is a part of the bill."""


class NearDecision(Figures):
    decision: str
    gate: str
    question: str
    bee: str | None
    outcome: str
    source: str
    p: float
    bar: float
    distance: float
    text: str | None
    other_text: str | None = None
    """For relate: the earlier note's text (``text`` is the later one)."""


class AuditReport(Figures):
    run: str
    status: str
    problem: str
    started_at: str
    ended_at: str | None
    duration_s: float | None
    """From the start to the end, including any time the run spent stopped before a ``hive resume``: to now
    while it runs, to its last sign of life when its coordinator died without writing ``ended_at``."""
    resumed_at: list[str] = Field(default_factory=list)
    filters: dict[str, str]
    funnel: Funnel
    gates: dict[str, GateFigures]
    relations: RelationFigures
    corrections: int
    disputes: DisputeFigures
    bees: list[BeeFigures]
    totals: Totals
    near_threshold: list[NearDecision]
    labels: LabelReport | None = None
    warnings: list[str] = Field(default_factory=list)


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class BeeUsage:
    tokens: int
    cost_usd: float | None


def usage_from_bee_info(bee: BeeInfo) -> BeeUsage | None:
    """Usage the coordinator recorded in ``run.json`` (extra fields ``tokens`` or ``input_tokens`` +
    ``output_tokens``, and ``cost_usd``), if any."""
    extra = bee.model_extra or {}
    tokens = _as_int(extra.get("tokens"))
    if tokens is None and ("input_tokens" in extra or "output_tokens" in extra):
        tokens = (_as_int(extra.get("input_tokens")) or 0) + (_as_int(extra.get("output_tokens")) or 0)
    cost = _as_float(extra.get("cost_usd"))
    if tokens is None and cost is None:
        return None
    return BeeUsage(tokens or 0, cost)


def larger_usage(recorded: BeeUsage | None, logged: BeeUsage | None) -> BeeUsage | None:
    """A bee's usage: ``run.json``'s (``recorded``), unless its transcript's (``logged``) says more. The bee writes
    a usage line at every call, while the coordinator rewrites ``run.json`` only now and then (a bee's end, a
    spawn): one killed mid-run leaves it behind."""
    if recorded is None or (logged is not None and logged.tokens > recorded.tokens):
        return logged
    return recorded


def _as_int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return int(value)


def _as_float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return float(value)


# --------------------------------------------------------------------------- figures


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-quantile (0 ≤ q ≤ 1) by linear interpolation between closest ranks; ``None`` for no values."""
    if not values:
        return None
    ordered = sorted(values)
    position = (len(ordered) - 1) * q
    lo, hi = math.floor(position), math.ceil(position)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (position - lo)


def gate_figures(decisions: Sequence[GateDecision]) -> GateFigures:
    """decisions, yes / no / unsure, sources, fallback reasons, latency, tokens and tiers of one gate."""
    verdicts = Counter(verdict_of(d) for d in decisions)
    fallback_reasons = Counter(d.reason or "unsure" for d in decisions if d.source == "fallback")
    asked = [d for d in decisions if asked_the_judge(d)]
    tiers: Counter[str] = Counter()
    tier_errors: Counter[str] = Counter()
    for d in decisions:
        if d.source == "judge":
            tiers.update(_deciding_tiers(d))
        for call in d.tiers:
            if call.error:
                tier_errors[f"{call.tier} {call.error}"] += 1
    return GateFigures(
        decisions=len(decisions),
        yes=verdicts["yes"],
        no=verdicts["no"],
        unsure=verdicts["unsure"],
        fallback=sum(fallback_reasons.values()),
        by_source=dict(Counter(d.source for d in decisions)),
        fallback_reasons=dict(fallback_reasons),
        outcomes=dict(Counter(d.outcome for d in decisions)),
        verdicts=dict(Counter(d.verdict for d in decisions if d.verdict)),
        latency_ms_p50=_rounded(percentile([d.latency_ms for d in asked], 0.5)),
        latency_ms_p95=_rounded(percentile([d.latency_ms for d in asked], 0.95)),
        tokens=sum(map(_judge_tokens, decisions)),
        cost_usd=_rounded_cost(reduce(add_cost, (d.cost_usd for d in decisions), None)),
        tiers=dict(tiers),
        tier_errors=dict(tier_errors),
    )


def _deciding_tiers(decision: GateDecision) -> set[str]:
    kept = {a.tier for a in decision.answers.values() if a.tier and a.tier not in NEUTRAL_TIERS}
    return kept or {call.tier for call in decision.tiers if call.kept}


def _judge_tokens(decision: GateDecision) -> int:
    return decision.tokens or sum(call.tokens for call in decision.tiers)


def _rounded_cost(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def funnel_figures(
    decisions: Sequence[GateDecision], board: Sequence[BoardRecord], *, bee: str | None = None
) -> Funnel:
    """Utterances → duplicates dropped → published → delivered; with ``bee``, that bee's own output."""
    notes = {r.id: r for r in board if isinstance(r, Note)}

    def own_note(note_id: str) -> bool:
        return bee is None or (note_id in notes and notes[note_id].bee == bee)

    publish = [d for d in decisions if d.gate == "publish" and (bee is None or decision_bee(d) == bee)]
    capped = [d for d in decisions if (d.gate, d.outcome) == ("deliver", "capped") and own_note(d.note or "")]
    deliveries = {(r.note, r.to, r.how): r for r in board if isinstance(r, Delivery) and own_note(r.note)}
    handed = [r for r in deliveries.values() if r.how in ("judge", "rule")]
    duplicates = sum(d.outcome == "duplicate" for d in publish)
    return Funnel(
        utterances=len(publish),
        duplicates=duplicates,
        judged=len(publish) - duplicates,
        withheld=sum(d.outcome == "withhold" for d in publish),
        published=sum(own_note(n) for n in notes),
        delivered=len({(r.note, r.to) for r in handed}),
        delivered_by_judge=sum(r.how == "judge" for r in handed),
        delivered_by_rule=sum(r.how == "rule" for r in handed),
        capped=len(capped),
        notes_reaching_a_bee=len({r.note for r in handed}),
        corrections=sum(r.how == "correction" for r in deliveries.values()),
        conflict_notices=sum(r.how == "conflict" for r in deliveries.values()),
    )


def relation_figures(state: BoardState, *, bee: str | None = None) -> RelationFigures:
    """Relations that took effect on the board, by type, and how many crossed bees."""
    relations = [r for r in state.relations if bee is None or concerns_bee(r, bee, state.notes)]
    by_type = Counter(r.relation for r in relations)
    same = sum(r.same_bee for r in relations)
    return RelationFigures(
        by_type={kind: by_type[kind] for kind in ("supersedes", "contradicts", "supports")},
        same_bee=same,
        cross_bee=len(relations) - same,
    )


def dispute_figures(
    state: BoardState, board: Sequence[BoardRecord], bees: Mapping[str, BeeInfo], *, bee: str | None = None
) -> DisputeFigures:
    """Disputes opened, resolved (one side superseded) and left unsettled; verifiers and how they ended."""

    def concerns(notes: Iterable[str], verifier: str | None = None) -> bool:
        return bee is None or verifier == bee or any(
            n in state.notes and state.notes[n].bee == bee for n in notes
        )

    opened = [d for d in state.disputes.values() if concerns(d.notes, d.verifier)]
    unsettled = {d.id for d in state.open_disputes()}
    shown = {d.id for d in opened}
    runs = []
    for record in board:
        if isinstance(record, Verifier) and (record.dispute in shown or concerns(record.notes, record.bee)):
            info = bees.get(record.bee)
            runs.append(VerifierRun(
                bee=record.bee, dispute=record.dispute, notes=list(record.notes),
                outcome=info.outcome if info else None, reason=info.reason if info else None,
            ))
    return DisputeFigures(
        opened=len(opened),
        resolved=sum(d.id not in unsettled for d in opened),
        unsettled=sum(d.id in unsettled for d in opened),
        verifiers=len(runs),
        verifier_runs=runs,
    )


def bee_figures(
    info: RunInfo,
    decisions: Sequence[GateDecision],
    board: Sequence[BoardRecord],
    usage: Mapping[str, BeeUsage],
) -> list[BeeFigures]:
    """One row per bee of ``run.json`` (and any other bee the records name), in that order."""
    notes = {r.id: r for r in board if isinstance(r, Note)}
    deliveries = {(r.note, r.to, r.how) for r in board if isinstance(r, Delivery)}
    bees: dict[str, BeeInfo | None] = {b.id: b for b in info.bees}
    for name in [n.bee for n in notes.values()] + [b for d in decisions if (b := decision_bee(d))]:
        bees.setdefault(name, None)
    rows = []
    for bee_id, bee in bees.items():
        used = larger_usage(usage_from_bee_info(bee) if bee else None, usage.get(bee_id))
        rows.append(BeeFigures(
            id=bee_id,
            role=bee.role if bee else "",
            model=(bee.model if bee else "") or info.model,
            utterances=sum(d.gate == "publish" and decision_bee(d) == bee_id for d in decisions),
            published=sum(n.bee == bee_id for n in notes.values()),
            received=sum(to == bee_id for _, to, _ in deliveries),
            reached=sum(note in notes and notes[note].bee == bee_id for note, _, _ in deliveries),
            tokens=used.tokens if used else None,
            cost_usd=round(used.cost_usd, 6) if used and used.cost_usd is not None else None,
            outcome=bee.outcome if bee else None,
            reason=bee.reason if bee else None,
        ))
    return rows


def near_threshold(
    decisions: Sequence[GateDecision], notes: Mapping[str, Note], *, limit: int | None = DEFAULT_NEAR
) -> list[NearDecision]:
    """Judged decisions ordered by how close their deciding probability came to its bar, nearest first."""
    found = []
    for d in decisions:
        reading = deciding_reading(d, same_bee=same_bee(d, notes))
        if reading is None:
            continue
        subject = notes.get(d.later or d.note or "")
        earlier = notes.get(d.earlier or "") if d.gate == "relate" else None
        found.append(NearDecision(
            decision=d.id,
            gate=d.gate,
            question=reading.question,
            bee=decision_bee(d),
            outcome=d.outcome,
            source=d.source,
            p=round(reading.p, 4),
            bar=reading.bar,
            distance=round(reading.distance, 4),
            text=d.text or (subject.text if subject else None),
            other_text=earlier.text if earlier else None,
        ))
    found.sort(key=lambda n: n.distance)
    return found if limit is None else found[:limit]


# --------------------------------------------------------------------------- the whole audit


def compute_audit(
    info: RunInfo,
    board: Sequence[BoardRecord],
    decisions: Sequence[GateDecision],
    usage: Mapping[str, BeeUsage] | None = None,
    *,
    status: str | None = None,
    gate: str | None = None,
    bee: str | None = None,
    near: int | None = DEFAULT_NEAR,
    labels: Sequence[Label] | None = None,
    warnings: Sequence[str] = (),
    last_seen: datetime | None = None,
) -> AuditReport:
    """Every figure of one run, from its records. Pure: the caller reads the files.

    ``last_seen`` is when the run last wrote anything: the end of a run whose coordinator died unannounced.

    ``gate`` restricts the per-gate figures, near-threshold decisions and labels to one gate; ``bee``
    restricts everything to what concerns one bee (its utterances and notes, deliveries to and from it).
    """
    notes = {r.id: r for r in board if isinstance(r, Note)}
    listed = [b.id for b in info.bees]
    known_bees = listed + sorted({n.bee for n in notes.values()} - set(listed))
    if gate is not None and gate not in KNOWN_GATES and all(d.gate != gate for d in decisions):
        raise UsageError(f"unknown gate {gate!r}; choose from {', '.join(KNOWN_GATES)}")
    if bee is not None and bee not in known_bees:
        shown = ", ".join(known_bees) or "none"
        raise UsageError(f"no bee {bee!r} in run {info.id} (bees: {shown})")

    state = fold(board)
    full_board = board
    if bee is not None:
        decisions = [d for d in decisions if concerns_bee(d, bee, notes)]
        board = [r for r in board if concerns_bee(r, bee, notes)]
    gated = [d for d in decisions if gate is None or d.gate == gate]

    # The gates asked about are always there, with zeros if they decided nothing (a gate switched off).
    by_gate: dict[str, list[GateDecision]] = {g: [] for g in (GATES if gate is None else (gate,))}
    for d in gated:
        by_gate.setdefault(d.gate, []).append(d)
    order = {name: i for i, name in enumerate(KNOWN_GATES)}
    ordered = sorted(by_gate.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0]))
    gates = {g: gate_figures(ds) for g, ds in ordered}

    bees_info = {b.id: b for b in info.bees}
    bee_rows = bee_figures(info, decisions, board, usage or {})
    if bee is not None:
        bee_rows = [row for row in bee_rows if row.id == bee]
    bee_tokens = [row.tokens for row in bee_rows if row.tokens is not None]
    costs = [row.cost_usd for row in bee_rows if row.cost_usd is not None]
    own = info.coordinator if bee is None else None  # a bee's figures leave out the run's planning and answer
    if own is not None and own.cost_usd is not None:
        costs.append(own.cost_usd)
    costs += [g.cost_usd for g in gates.values() if g.cost_usd is not None]
    unpriced = sum(row.tokens or 0 for row in bee_rows if row.cost_usd is None)
    unpriced += sum(_judge_tokens(d) for d in gated if d.cost_usd is None)
    if own is not None and own.cost_usd is None:
        unpriced += own.input_tokens + own.output_tokens
    funnel = funnel_figures(decisions, board, bee=bee)
    filters = {k: v for k, v in (("gate", gate), ("bee", bee)) if v is not None}
    return AuditReport(
        run=info.id,
        status=status or info.status,
        problem=info.problem,
        started_at=info.started_at,
        ended_at=info.ended_at,
        duration_s=_rounded(duration_seconds(info, last_seen=last_seen)),
        resumed_at=info.resumed_at or [],
        filters=filters,
        funnel=funnel,
        gates=gates,
        relations=relation_figures(state, bee=bee),
        corrections=funnel.corrections,
        disputes=dispute_figures(state, full_board, bees_info, bee=bee),
        bees=bee_rows,
        totals=Totals(
            bee_tokens=sum(bee_tokens) if bee_tokens else None,
            judge_tokens=sum(g.tokens for g in gates.values()),
            coordinator_tokens=own.input_tokens + own.output_tokens if own is not None else None,
            cost_usd=round(sum(costs), 6) if costs else None,
            unpriced_tokens=unpriced,
        ),
        near_threshold=near_threshold(gated, notes, limit=near),
        labels=label_report(gated, labels, notes) if labels is not None else None,
        warnings=list(warnings),
    )


def _read_records(reader: JsonlReader[Any]) -> tuple[list[Any], list[str]]:
    """Every complete record, plus warnings for corrupt lines and for a torn last line left by a crash."""
    records = reader.read_new()
    warnings = list(reader.warnings)
    try:
        size = reader.path.stat().st_size
    except FileNotFoundError:
        return records, warnings
    if size > reader.offset:
        message = (f"{reader.path}: line {reader.line_no + 1}: ignored a torn last line "
                   f"({size - reader.offset} bytes without a newline)")
        warnings.append(message)
        log.warning(message)
    return records, warnings


def audit_run(
    paths: RunPaths,
    *,
    gate: str | None = None,
    bee: str | None = None,
    near: int | None = DEFAULT_NEAR,
    labels: Path | None = None,
) -> AuditReport:
    """Read a run directory (finished, interrupted or crashed) and compute its audit."""
    info = load_run_info(paths)
    try:
        board, warnings = _read_records(JsonlReader(paths.board, BOARD_ADAPTER))
        decisions, gate_warnings = _read_records(JsonlReader(paths.gate, GateDecision))
    except StoreError as e:  # the board or the gate log is the audit's input: without it there is no audit
        raise UsageError(str(e)) from e
    warnings += gate_warnings
    usage: dict[str, BeeUsage] = {}
    for bee_id in _bee_dirs(paths, warnings):
        try:
            entries, transcript_warnings = _read_records(JsonlReader(paths.transcript(bee_id), TranscriptEntry))
        except StoreError as e:  # one transcript only adds a bee's tokens: the rest of the audit stands
            _warn(warnings, f"{e}; {bee_id}'s tokens and cost are left out")
            continue
        warnings += transcript_warnings
        used = transcript_spent(entries)
        if used is not None:
            usage[bee_id] = BeeUsage(used.total, used.cost_usd)
    label_rows = None
    if labels is not None:
        label_lines, label_warnings = load_labels(labels)
        label_rows, check_warnings = checked_labels(label_lines, decisions, labels)
        warnings += label_warnings + check_warnings
    return compute_audit(info, board, decisions, usage, status=effective_status(info), gate=gate, bee=bee,
                         near=near, labels=label_rows, warnings=warnings, last_seen=last_sign_of_life(paths))


def _bee_dirs(paths: RunPaths, warnings: list[str]) -> list[str]:
    """The bees that left a directory under ``bees/``; one that cannot be listed is a warning."""
    bees_dir = paths.dir / "bees"
    try:
        return sorted(p.name for p in bees_dir.iterdir() if p.is_dir())
    except FileNotFoundError:
        return []
    except OSError as e:
        _warn(warnings, f"cannot read {bees_dir}: {e.strerror}; the bees' tokens and cost are left out")
        return []


def _warn(warnings: list[str], message: str) -> None:
    warnings.append(message)
    log.warning(message)


def label_template(near: Sequence[NearDecision]) -> list[dict[str, Any]]:
    """The ``--export-labels`` lines: each near-threshold decision with its context and ``"label": null``."""
    return [{**n.model_dump(mode="json", exclude_none=True), "label": None} for n in near]


# --------------------------------------------------------------------------- the report as text


def format_audit(report: AuditReport, *, text_width: int = 100) -> list[str]:
    """The report as plain lines for a terminal or a pipe, with control characters escaped: the texts are
    the bees', and a bee's or verifier's reason may quote what a model or a provider said."""
    lines = [_title(report), f"problem: {_clip(report.problem, text_width)}"]
    if report.filters:
        lines.append("filtered: " + ", ".join(f"{k} {v}" for k, v in report.filters.items()))
    lines += ["", *_funnel_lines(report.funnel), "", *_gate_lines(report.gates)]
    lines += ["", *_board_lines(report), "", *_bee_lines(report), ""]
    lines += _near_lines(report.near_threshold, text_width)
    if report.labels is not None:
        lines += ["", *_label_lines(report.labels)]
    if report.warnings:
        lines += ["", f"{len(report.warnings)} warning(s) while reading; see stderr or --json"]
    return [printable(line) for line in lines]


def _title(report: AuditReport) -> str:
    parts = [f"run {report.run}", report.status, plural(len(report.bees), "bee")]
    if report.duration_s is not None:
        parts.append(_duration(report.duration_s))
    if report.resumed_at:
        parts.append(f"resumed {len(report.resumed_at)}×")
    return " · ".join(parts)


def _funnel_lines(f: Funnel) -> list[str]:
    return [
        f"Funnel: {f.summary()}",
        f"  {f.utterances} utterances → {f.duplicates} duplicates dropped → {f.judged} judged → "
        f"{f.published} published ({f.withheld} withheld) → {f.delivered} delivered",
        f"  deliveries: {f.delivered_by_judge} by the judge, {f.delivered_by_rule} by rule (decisions, "
        f"blockers); {f.capped} capped; {f.notes_reaching_a_bee} of {f.published} notes reached a bee",
        f"  corrections sent: {f.corrections} · conflict notices: {f.conflict_notices}",
    ]


_GATE_HEADER = ("gate", "decisions", "yes", "no", "unsure", "judge", "fallback", "rule", "shadow", "p50 ms",
                "p95 ms", "tokens")


def _gate_lines(gates: Mapping[str, GateFigures]) -> list[str]:
    rows: list[Sequence[str]] = [_GATE_HEADER]
    for name, g in gates.items():
        rows.append((name, str(g.decisions), str(g.yes), str(g.no), str(g.unsure),
                     *(str(g.by_source.get(s, 0)) for s in ("judge", "fallback", "rule", "shadow")),
                     _number(g.latency_ms_p50), _number(g.latency_ms_p95), _tokens(g.tokens)))
    lines = ["Gates", *_table(rows, indent=2)]
    for name, g in gates.items():
        details = []
        if g.fallback_reasons:
            details.append("fallback " + _counts(g.fallback_reasons))
        if g.tiers:
            details.append("decided by " + _counts(g.tiers))
        if g.tier_errors:
            details.append("tier errors " + _counts(g.tier_errors))
        if details:
            lines.append(f"  {name}: " + "; ".join(details))
    return lines


def _board_lines(report: AuditReport) -> list[str]:
    r, d = report.relations, report.disputes
    types = ", ".join(f"{n} {kind}" for kind, n in r.by_type.items())
    lines = [
        f"Relations: {types} ({r.cross_bee} across bees, {r.same_bee} within one)",
        f"Disputes: {d.opened} opened, {d.resolved} resolved, {d.unsettled} left unsettled · "
        f"verifiers spawned: {d.verifiers}",
    ]
    for v in d.verifier_runs:
        ended = v.outcome or "no outcome recorded"
        lines.append(f"  {v.bee} on {v.dispute} ({' vs '.join(v.notes)}): {ended}"
                     + (f" ({v.reason})" if v.reason else ""))
    return lines


def _bee_lines(report: AuditReport) -> list[str]:
    rows: list[Sequence[str]] = [("bee", "role", "model", "utterances", "published", "received", "reached",
                                  "tokens", "cost", "outcome")]
    for b in report.bees:
        outcome = (b.outcome or "-") + (f" ({b.reason})" if b.reason else "")
        rows.append((b.id, b.role or "-", _squeeze(b.model or "-", 24), str(b.utterances), str(b.published),
                     str(b.received), str(b.reached), _tokens(b.tokens), _cost(b.cost_usd), outcome))
    t = report.totals
    tokens = f"Tokens: bees {_tokens(t.bee_tokens)}, judge {_tokens(t.judge_tokens)}"
    if t.coordinator_tokens is not None:
        tokens += f", coordinator {_tokens(t.coordinator_tokens)}"
    priced_in_part = t.cost_usd is not None and t.unpriced_tokens
    unpriced = f" + {_tokens(t.unpriced_tokens)} tokens without a known price" if priced_in_part else ""
    totals = f"{tokens}; cost {_cost(t.cost_usd)}{unpriced}"
    return ["Bees", *_table(rows, indent=2, left=(0, 1, 2, 9)), totals]


def _near_lines(near: Sequence[NearDecision], width: int) -> list[str]:
    if not near:
        return ["Nearest their thresholds: no judged decision with a probability"]
    lines = ["Nearest their thresholds (look here first):"]
    for n in near:
        lines.append(f"  {n.decision} {n.gate} {n.question} p {n.p:.3f} vs bar {n.bar:.2f} → {n.outcome} "
                     f"({n.source}{', ' + n.bee if n.bee else ''})")
        if n.text:
            lines.append(f"      {_clip(n.text, width)}")
        if n.other_text:
            lines.append(f"      earlier: {_clip(n.other_text, width - 9)}")
    return lines


def _label_lines(labels: LabelReport) -> list[str]:
    lines = [f"Labels: {labels.labelled} labelled, {labels.correct} correct ({_percent(labels.accuracy)}); "
             f"{labels.unlabelled} unlabelled; {len(labels.unknown)} not in this run"]
    if labels.by_gate:
        lines.append("  " + " · ".join(f"{g} {a.correct}/{a.n} ({_percent(a.accuracy)})"
                                       for g, a in labels.by_gate.items()))
    for table in labels.calibration:
        observed = "label yes" if table.kind == "boolean" else "pick right"
        lines += ["", f"Calibration: {table.group} ({table.kind}, n={table.n})"]
        rows: list[Sequence[str]] = [("p", "n", "mean p", observed)]
        rows += [(f"{b.lo:.1f}-{b.hi:.1f}", str(b.n), _number(b.mean_p, 2), _percent(b.observed))
                 for b in table.bins if b.n]
        lines += _table(rows, indent=2)
        rows = [("if the bar were", "coverage", "accuracy", "precision", "confident wrong")]
        rows += [(f"{r.bar:.1f}", _percent(r.coverage), _percent(r.accuracy), _percent(r.precision),
                  _percent(r.confident_wrong)) for r in table.bars]
        lines += _table(rows, indent=2)
    return lines


def _table(rows: Sequence[Sequence[str]], *, indent: int = 0, left: Iterable[int] = (0,)) -> list[str]:
    """Rows as aligned columns: text columns (``left``) flush left, numbers flush right."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    flush_left = set(left)
    lines = []
    for row in rows:
        cells = [cell.ljust(w) if i in flush_left else cell.rjust(w)
                 for i, (cell, w) in enumerate(zip(row, widths, strict=True))]
        lines.append(" " * indent + "  ".join(cells).rstrip())
    return lines


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{key} {n}" for key, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def _number(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.0f}%"


def _tokens(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value / 1000:.1f}k" if value >= 10_000 else str(value)


def _cost(value: float | None) -> str:
    return "-" if value is None else dollars(value)


def _duration(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _squeeze(text: str, width: int) -> str:
    """Cut from the middle: the ends of a model spec (provider, file name) say the most."""
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"
