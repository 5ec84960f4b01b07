"""Human labels for a run's gate decisions: how often the gates were right, and how well calibrated.

A labels file has one JSON object per line: ``{"decision": "<id in gate.jsonl>", "label": ...}``, where the
label is ``true`` / ``false`` (should the gate have said yes: publish, is it news; deliver, is it useful;
relate, is there a relation at all) or the correct option (a note kind or ``other`` for publish; a
relation or ``none`` for relate). ``"label": null`` marks a line not labelled yet (the export template).
Any other value is skipped with a warning naming its line; of several labels for one decision, the last counts.

Calibration groups the labelled probabilities per gate and question (relate split into cross-bee and
same-bee, whose bars differ): ten bins of mean probability against the observed rate, and, for each
candidate bar, the coverage, accuracy and confident-wrong rate it would have given. That is how a team
re-derives bars like the 0.9 for a cross-bee ``supersedes`` from its own runs.
"""

from __future__ import annotations

import codecs
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import orjson
from pydantic import BaseModel, ConfigDict, ValidationError

from hive.errors import UsageError
from hive.observe.reading import ESCAPE_OPTIONS, NEGATIVE_OUTCOMES, NEUTRAL_TIERS, same_bee
from hive.records import NOTE_KINDS, GateDecision, Note

log = logging.getLogger("hive.observe")

CALIBRATION_BARS: tuple[float, ...] = (0.6, 0.7, 0.8, 0.9)


class _Figures(BaseModel):
    model_config = ConfigDict(frozen=True)


class Label(BaseModel):
    """One line of a labels file. Other fields (the template's context) are kept and ignored."""

    model_config = ConfigDict(extra="allow", frozen=True)

    decision: str
    label: bool | str | None = None



class CalibrationBin(_Figures):
    lo: float
    hi: float
    n: int
    mean_p: float | None
    observed: float | None
    """Share of the bin's items whose label was yes (boolean) or whose pick was right (choice)."""


class BarRow(_Figures):
    bar: float
    coverage: float
    """Share of items answered confidently at this bar."""
    accuracy: float
    """Share of all items answered confidently and rightly (unsure counts as not correct)."""
    precision: float | None
    """Share of confident answers that were right."""
    confident_wrong: float
    """Share of all items answered confidently and wrongly: the only way a gate does harm."""


class CalibrationTable(_Figures):
    group: str
    """``<gate>.<question>``, relate split into cross-bee and same-bee."""
    kind: Literal["boolean", "choice"]
    n: int
    bins: list[CalibrationBin]
    bars: list[BarRow]


class LabelAccuracy(_Figures):
    n: int
    correct: int
    accuracy: float | None


class LabelReport(_Figures):
    labelled: int
    correct: int
    accuracy: float | None
    unlabelled: int
    unknown: list[str]
    """Labelled decision ids that are not in this run (or not in the audit's filter)."""
    by_gate: dict[str, LabelAccuracy]
    calibration: list[CalibrationTable]



@dataclass(frozen=True)
class LabelPoint:
    """One labelled probability: ``p`` is p(yes) for a boolean, the pick's probability for a choice."""

    group: str
    kind: Literal["boolean", "choice"]
    p: float
    truth: bool
    """boolean: the label is yes. choice: the pick matches the label."""


def _normalized(label: bool | str) -> bool | str:
    if isinstance(label, str):
        label = label.strip().lower()
        return "none" if label == "unrelated" else label
    return label


def decision_correct(decision: GateDecision, label: bool | str) -> bool:
    """Whether the decision as made agrees with a person's label."""
    label = _normalized(label)
    positive = decision.outcome not in NEGATIVE_OUTCOMES
    if isinstance(label, bool):
        return positive == label
    if decision.gate == "publish" and label in NOTE_KINDS:
        return decision.outcome == "publish" and decision.kind == label
    if label in ESCAPE_OPTIONS or label in NEGATIVE_OUTCOMES:
        return not positive
    return decision.outcome == label


def label_point(decision: GateDecision, label: bool | str, *, one_bee: bool | None) -> LabelPoint | None:
    """The probability a labelled decision turned on, paired with what the label says about it."""
    label = _normalized(label)
    suffix = ""
    if decision.gate == "relate":
        suffix = " (same bee)" if one_bee else " (cross-bee)"
    for name, answer in decision.answers.items():
        if answer.tier in NEUTRAL_TIERS:
            continue
        group = f"{decision.gate}.{name}{suffix}"
        if answer.type == "boolean" and answer.p is not None and isinstance(label, bool):
            return LabelPoint(group, "boolean", answer.p, label)
        if answer.type != "choice" or answer.pick is None:
            continue
        probs = answer.probs or {}
        if isinstance(label, str):
            p = answer.p if answer.p is not None else probs.get(answer.pick)
            if p is not None:
                return LabelPoint(group, "choice", p, answer.pick == label)
        elif decision.gate == "relate":
            # A yes/no label on a relation: is there one at all? p(yes) = 1 − p(none).
            if "none" in probs:
                return LabelPoint(group, "boolean", 1.0 - probs["none"], label)
            if answer.p is not None:
                p_relation = 1.0 - answer.p if answer.pick == "none" else answer.p
                return LabelPoint(group, "boolean", p_relation, label)
    return None


def calibration_table(group: str, points: Sequence[LabelPoint], bars: Sequence[float] = CALIBRATION_BARS
                      ) -> CalibrationTable:
    """Ten probability bins (mean p vs observed rate) and what each candidate bar would have done."""
    kind = points[0].kind
    bins = []
    for i in range(10):
        lo, hi = i / 10, (i + 1) / 10
        inside = [pt for pt in points if lo <= pt.p < hi or (i == 9 and pt.p == 1.0)]
        bins.append(CalibrationBin(
            lo=lo, hi=hi, n=len(inside),
            mean_p=round(sum(pt.p for pt in inside) / len(inside), 4) if inside else None,
            observed=round(sum(pt.truth for pt in inside) / len(inside), 4) if inside else None,
        ))
    rows = []
    n = len(points)
    for bar in bars:
        confident = right = 0
        for pt in points:
            if kind == "boolean":
                said_yes, said_no = pt.p >= bar, 1.0 - pt.p >= bar  # symmetric, and exact at 0.1 vs 0.9
                if said_yes or said_no:
                    confident += 1
                    right += said_yes == pt.truth
            elif pt.p >= bar:
                confident += 1
                right += pt.truth
        rows.append(BarRow(
            bar=bar,
            coverage=round(confident / n, 4),
            accuracy=round(right / n, 4),
            precision=round(right / confident, 4) if confident else None,
            confident_wrong=round((confident - right) / n, 4),
        ))
    return CalibrationTable(group=group, kind=kind, n=n, bins=bins, bars=rows)


def label_report(
    decisions: Sequence[GateDecision], labels: Sequence[Label], notes: Mapping[str, Note]
) -> LabelReport:
    """Accuracy of the decisions as made, and calibration of their probabilities, against human labels."""
    by_id = {d.id: d for d in decisions}
    unknown: list[str] = []
    unlabelled = 0
    tally: dict[str, list[bool]] = {}
    points: dict[str, list[LabelPoint]] = {}
    for row in labels:
        if row.label is None:
            unlabelled += 1
            continue
        decision = by_id.get(row.decision)
        if decision is None:
            unknown.append(row.decision)
            continue
        tally.setdefault(decision.gate, []).append(decision_correct(decision, row.label))
        point = label_point(decision, row.label, one_bee=same_bee(decision, notes))
        if point is not None:
            points.setdefault(f"{point.group} [{point.kind}]", []).append(point)
    all_marks = [mark for marks in tally.values() for mark in marks]
    return LabelReport(
        labelled=len(all_marks),
        correct=sum(all_marks),
        accuracy=round(sum(all_marks) / len(all_marks), 4) if all_marks else None,
        unlabelled=unlabelled,
        unknown=unknown,
        by_gate={gate: LabelAccuracy(n=len(m), correct=sum(m), accuracy=round(sum(m) / len(m), 4))
                 for gate, m in tally.items()},
        calibration=[calibration_table(pts[0].group, pts) for _, pts in sorted(points.items())],
    )


@dataclass(frozen=True)
class LabelLine:
    """A label with the line of the labels file it came from, so that a warning can name it."""

    number: int
    label: Label


def load_labels(path: Path) -> tuple[list[LabelLine], list[str]]:
    """A labels file: one JSON object per line. A bad line is skipped with a warning naming it."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError as e:
        raise UsageError(f"labels file {str(path)!r} does not exist") from e
    except OSError as e:
        raise UsageError(f"cannot read labels file {str(path)!r}: {e.strerror}") from e
    labels: list[LabelLine] = []
    warnings: list[str] = []
    raw = raw.removeprefix(codecs.BOM_UTF8)  # editors on Windows start a UTF-8 file with one
    for number, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            labels.append(LabelLine(number, Label.model_validate(orjson.loads(line))))
        except (orjson.JSONDecodeError, ValidationError) as e:
            first = str(e).strip().splitlines()[0][:120]
            _warn(warnings, f"{path}: line {number}: skipped a bad label line ({first})")
    return labels, warnings


def refuse_overwriting(path: Path) -> None:
    """``--export-labels`` writes over ``path`` only when it is missing, empty, or a template nobody has labelled
    yet: re-exporting (a larger ``--near``) over a half-labelled file, or a slip of the tab key onto a file of
    one's own, would throw a person's work away. Else a one-line :class:`UsageError`."""
    if not path.is_file():
        return  # nothing to lose: no file, or /dev/stdout, a pipe (a directory fails the write with its own message)
    try:
        raw = path.read_bytes().removeprefix(codecs.BOM_UTF8)
    except OSError as e:
        raise UsageError(f"cannot read {path} before writing over it: {e.strerror}") from e
    labelled = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            labelled += Label.model_validate(orjson.loads(line)).label is not None
        except (orjson.JSONDecodeError, ValidationError):
            raise UsageError(f"--export-labels {path} exists and is not a label template: "
                             "write the template elsewhere") from None
    if labelled:
        raise UsageError(f"--export-labels {path} holds {labelled} label{'s' if labelled != 1 else ''} a person "
                         "gave: write the template elsewhere, or delete the file first")


GATE_LABEL_OPTIONS: dict[str, tuple[str, ...]] = {
    "publish": (*NOTE_KINDS, "other"),
    "relate": ("supersedes", "contradicts", "supports", "none"),
}
"""The options a person may name instead of ``true`` / ``false``, per gate (``unrelated`` reads as ``none``)."""


def label_options(decision: GateDecision) -> list[str]:
    """The words that make sense as a label of ``decision``: its gate's options and its choice answers'."""
    options = list(GATE_LABEL_OPTIONS.get(decision.gate, ()))
    for answer in decision.answers.values():
        if answer.type == "choice":
            options += [o for o in (*(answer.probs or {}), answer.pick) if o and o not in options]
    return options


def checked_labels(
    lines: Sequence[LabelLine], decisions: Sequence[GateDecision], source: Path
) -> tuple[list[Label], list[str]]:
    """The labels to score. A value that means nothing for its decision (``"banana"`` for a publish
    decision) is skipped, and of several labels for one decision the last counts: each with a warning
    naming its line of ``source``. Unlabelled lines and decisions not in the run are kept for the counts."""
    by_id = {d.id: d for d in decisions}
    kept: dict[str, LabelLine] = {}
    unlabelled: list[Label] = []
    warnings: list[str] = []
    for line in lines:
        label, where = line.label, f"{source}: line {line.number}"
        if label.label is None:
            unlabelled.append(label)
            continue
        decision = by_id.get(label.decision)
        if decision is not None and isinstance(label.label, str):
            options = label_options(decision)
            if _normalized(label.label) not in options:
                takes = f"true, false or one of {', '.join(options)}" if options else "true or false"
                _warn(warnings, f"{where}: skipped label {label.label!r} for {label.decision}: "
                                f"a {decision.gate} decision takes {takes}")
                continue
        earlier = kept.pop(label.decision, None)
        if earlier is not None:
            _warn(warnings, f"{where}: {label.decision} was labelled on line {earlier.number} too: "
                            "the last label counts")
        kept[label.decision] = line
    return [line.label for line in kept.values()] + unlabelled, warnings


def _warn(warnings: list[str], message: str) -> None:
    warnings.append(message)
    log.warning(message)
