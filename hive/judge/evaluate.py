"""Measuring a judge on labelled gate items (the JSONL format of the shared evaluation sets).

Each item goes through the real gate (:class:`hive.gates.Gates`) exactly as in a live run: all of a gate's
questions for one item in one call per tier, items one after another. Item formats, one JSON object a line:

- publish: ``text``, ``kind`` (``finding``, ``dead_end``, ``decision``, ``blocker`` or ``routine``, also
  written ``other``, the gate's name for it), ``news`` (bool); optional ``bee``, ``focus``, ``problem`` (the goal).
- relate: ``a`` (earlier), ``b`` (later), ``same_bee`` (bool), ``relation`` (``supersedes``,
  ``contradicts``, ``supports`` or ``unrelated``, also written ``none``, the gate's escape); optional ``a_kind``,
  ``b_kind`` (default ``finding``), ``problem``. A same-bee ``contradicts`` is scored as ``supersedes``, which
  is what the gate makes of it.
- deliver: ``note``, ``focus``, ``useful`` (bool); optional ``kind`` (default ``finding``; a decision or
  blocker is delivered by rule), ``problem``.

Other fields are ignored; an optional field that is ``null`` takes its default; an ``id`` may be a number. A
UTF-8 byte order mark, CRLF line ends and blank lines are fine.

An unsure answer is never correct: ``accuracy`` counts confident right answers over all items,
``coverage`` the confident share, and ``confident_wrong`` the share answered confidently and wrongly,
the only way a gate does harm; ``right_when_confident`` (accuracy over coverage) checks the bars: a
calibrated judge is right at least as often as the bar it cleared says. For relate, ``related_*`` also
scores related-vs-none on its own: a pair counts as related when the three relations together reach the
0.6 pick bar, as unrelated when ``none`` does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from hive.errors import UsageError
from hive.gates import Gates
from hive.judge.policy import PICK_AT
from hive.providers.base import add_cost
from hive.records import Answer, Note, NoteKind, Utterance

UNSURE = "unsure"
EvalGate = Literal["publish", "relate", "deliver"]


class _Item(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)

    id: str = ""
    problem: str = ""

    @field_validator("*", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any, info: ValidationInfo) -> Any:
        """An optional field written ``null`` takes its default; an ``id`` written as a number is that number."""
        field = cls.model_fields[info.field_name] if info.field_name else None
        if value is None and field is not None and not field.is_required():
            return field.get_default(call_default_factory=True)
        if info.field_name == "id" and isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        return value


Text = Annotated[str, Field(pattern=r"\S")]
"""A text the gate reads: an empty one is a malformed item, as it is a usage error for ``hive judge ask``."""


def _alias(names: dict[str, str]) -> Any:
    """A before-validator mapping a label's other spelling to the file format's (the gate's escape name)."""
    return BeforeValidator(lambda value: names.get(value, value) if isinstance(value, str) else value)


class PublishItem(_Item):
    text: Text
    kind: Annotated[
        Literal["finding", "dead_end", "decision", "blocker", "routine"], _alias({"other": "routine"})
    ]
    news: bool
    bee: str = "bee-1"
    focus: str = ""


class RelateItem(_Item):
    a: Text
    b: Text
    same_bee: bool
    relation: Annotated[Literal["supersedes", "contradicts", "supports", "unrelated"], _alias({"none": "unrelated"})]
    a_kind: NoteKind = "finding"
    b_kind: NoteKind = "finding"


class DeliverItem(_Item):
    note: Text
    focus: Text
    useful: bool
    kind: NoteKind = "finding"


ITEM_MODELS: dict[str, type[_Item]] = {"publish": PublishItem, "relate": RelateItem, "deliver": DeliverItem}


def _other_gate(data: Any, gate: str) -> str | None:
    """The other gate whose item ``data`` is, if any: a file given with the wrong ``--gate``."""
    for other, model in ITEM_MODELS.items():
        if other == gate:
            continue
        try:
            model.model_validate(data)
        except ValidationError:
            continue
        return other
    return None


def load_items(path: Path, gate: str) -> list[_Item]:
    """Read and check an evaluation file; raise :class:`UsageError` (one line) naming the bad line."""
    model = ITEM_MODELS.get(gate)
    if model is None:
        raise UsageError(f"unknown gate {gate!r}; choose publish, relate or deliver")
    try:
        # A byte order mark is no part of line 1. Lines end at "\n" only (a CRLF's "\r" is JSON whitespace):
        # str.splitlines() would also break at a U+2028 or U+0085 that JSON allows raw inside a string.
        lines = path.read_text(encoding="utf-8-sig").split("\n")
    except OSError as e:
        raise UsageError(f"cannot read {str(path)!r}: {e.strerror}") from e
    except UnicodeDecodeError as e:
        raise UsageError(f"{str(path)!r} is not UTF-8 text") from e
    items: list[_Item] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            items.append(model.model_validate(json.loads(line)))
        except json.JSONDecodeError as e:
            raise UsageError(f"{path}: line {number} is not JSON ({e.msg})") from e
        except RecursionError as e:
            raise UsageError(f"{path}: line {number} is not an item (nested too deeply)") from e
        except ValidationError as e:
            problem = e.errors()[0]
            place = ".".join(str(part) for part in problem["loc"]) or "item"
            hint = _other_gate(json.loads(line), gate)
            raise UsageError(
                f"{path}: line {number} is not a {gate} item: {place}: {problem['msg']}"
                + (f" (it is a {hint} item: --gate {hint}?)" if hint else "")
            ) from e
    if not items:
        raise UsageError(f"{path} has no items")
    return items


# --------------------------------------------------------------------------- scoring (pure)


@dataclass(frozen=True)
class Scores:
    n: int
    accuracy: float
    coverage: float
    confident_wrong: float
    macro_f1: float
    labels: list[str]
    confusion: dict[str, dict[str, int]]
    """gold label → predicted label (or ``unsure``) → count."""

    @property
    def right_when_confident(self) -> float:
        """The share of confident answers that are right: what the bars promise (≥ 0.8 for a boolean, ≥ 0.6
        for a picked choice) if the probabilities mean what they say."""
        return self.accuracy / self.coverage if self.coverage else 0.0


def score_labels(gold: Sequence[str], predicted: Sequence[str]) -> Scores:
    """Accuracy, coverage, confident-wrong rate, macro-F1 and the confusion matrix; ``unsure`` is never right."""
    n = len(gold)
    confident = [(g, p) for g, p in zip(gold, predicted, strict=True) if p != UNSURE]
    right = sum(g == p for g, p in confident)
    labels = sorted(set(gold) | {p for _, p in confident})
    f1s = []
    for label in labels:
        true_positive = sum(g == p == label for g, p in confident)
        said = sum(p == label for _, p in confident)
        real = sum(g == label for g in gold)
        precision = true_positive / said if said else 0.0
        recall = true_positive / real if real else 0.0
        f1s.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    confusion: dict[str, dict[str, int]] = {}
    for g, p in zip(gold, predicted, strict=True):
        row = confusion.setdefault(g, {})
        row[p] = row.get(p, 0) + 1
    return Scores(
        n=n,
        accuracy=right / n if n else 0.0,
        coverage=len(confident) / n if n else 0.0,
        confident_wrong=(len(confident) - right) / n if n else 0.0,
        macro_f1=sum(f1s) / len(f1s) if f1s else 0.0,
        labels=labels,
        confusion=confusion,
    )


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0–100) with linear interpolation; 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# --------------------------------------------------------------------------- running


def _zone_label(zone: str | None, value: str) -> str:
    return value if zone in ("yes", "no", "picked", "escape") else UNSURE


def _related_label(answer: Answer | None) -> str:
    """Related-vs-none from a relation answer: ``unrelated`` when ``none`` reaches the pick bar, ``related``
    when the three relations together do (a tier may know a pair is related without knowing how)."""
    if answer is None or answer.probs is None:
        return UNSURE
    p_none = answer.probs.get("none", 0.0)
    if p_none >= PICK_AT:
        return "unrelated"
    return "related" if 1.0 - p_none >= PICK_AT else UNSURE


async def evaluate(gates: Gates, gate: str, items: Sequence[_Item]) -> dict[str, Any]:
    """Run every item through ``gates`` and score it. Returns the report as plain JSON-able data.

    Each item is asked under its own ``problem`` as the gates' goal, as a live run asks under its problem;
    an item without one keeps the goal ``gates`` was made with. Tiers that load a model load it first
    (``load_ms``), so that the first item's latency is its own, as in a live run past its start.
    """
    load_ms = await gates.judge.load()
    default_goal = gates.goal
    gold: list[str] = []
    predicted: list[str] = []
    news_gold: list[str] = []
    news_predicted: list[str] = []
    latencies: list[float] = []
    tokens = 0
    cost: float | None = None
    errors = 0
    cross_supersedes_wrong = 0
    related_gold: list[str] = []
    related_predicted: list[str] = []
    try:
        for number, item in enumerate(items, 1):
            started = time.perf_counter()
            gates.goal = item.problem or default_goal
            row = None
            if isinstance(item, PublishItem):
                utterance = Utterance(bee=item.bee, seq=number, text=item.text)
                publish = await gates.publish(utterance, focus=item.focus, board=[])
                row = publish.decision
                kind = row.answers.get("kind") if row else None
                news = row.answers.get("news") if row else None
                kind_label = "routine" if kind and kind.zone == "escape" else (kind.pick or "") if kind else ""
                predicted.append(_zone_label(kind.zone if kind else None, kind_label))
                gold.append(item.kind)
                news_label = "true" if news and news.zone == "yes" else "false"
                news_predicted.append(_zone_label(news.zone if news else None, news_label))
                news_gold.append("true" if item.news else "false")
            elif isinstance(item, RelateItem):
                earlier = Note(id=f"{item.id or number}-a", bee="bee-1", kind=item.a_kind, text=item.a, score=1.0)
                later_bee = "bee-1" if item.same_bee else "bee-2"
                later = Note(id=f"{item.id or number}-b", bee=later_bee, kind=item.b_kind, text=item.b, score=1.0)
                relate = await gates.relate(earlier, later)
                row = relate.decision
                confident = row is not None and row.source == "judge"
                label = (relate.relation or "unrelated") if confident else UNSURE
                expected = "supersedes" if item.same_bee and item.relation == "contradicts" else item.relation
                predicted.append(label)
                gold.append(expected)
                if not item.same_bee and label == "supersedes" and expected != "supersedes":
                    cross_supersedes_wrong += 1
                related_gold.append("unrelated" if item.relation == "unrelated" else "related")
                related_predicted.append(_related_label(row.answers.get("relation") if row else None))
            elif isinstance(item, DeliverItem):
                note = Note(id=f"{item.id or number}", bee="bee-1", kind=item.kind, text=item.note, score=1.0)
                deliver = await gates.deliver(note, to_bee="bee-2", focus=item.focus)
                row = deliver.decision
                confident = row is not None and row.source in ("judge", "rule")
                predicted.append(("true" if deliver.deliver else "false") if confident else UNSURE)
                gold.append("true" if item.useful else "false")
            latencies.append((time.perf_counter() - started) * 1000)
            if row is not None:
                tokens += row.tokens
                cost = add_cost(cost, row.cost_usd)
                errors += any(call.error for call in row.tiers)
    finally:
        gates.goal = default_goal  # the caller's gates are left as they were given
    scores = score_labels(gold, predicted)
    report: dict[str, Any] = {
        "gate": gate,
        "judge": gates.judge.spec,
        "n": scores.n,
        "accuracy": scores.accuracy,
        "coverage": scores.coverage,
        "confident_wrong": scores.confident_wrong,
        "right_when_confident": scores.right_when_confident,
        "macro_f1": scores.macro_f1,
        "labels": scores.labels,
        "confusion": scores.confusion,
        "latency_ms_p50": percentile(latencies, 50),
        "latency_ms_p95": percentile(latencies, 95),
        "load_ms": load_ms,
        "tokens": tokens,
        "cost_usd": None if cost is None else round(cost, 6),
        "tier_errors": errors,
    }
    if gate == "publish":
        news_scores = score_labels(news_gold, news_predicted)
        report |= {
            "news_accuracy": news_scores.accuracy,
            "news_coverage": news_scores.coverage,
            "news_confident_wrong": news_scores.confident_wrong,
            "news_right_when_confident": news_scores.right_when_confident,
            "news_confusion": news_scores.confusion,
        }
    if gate == "relate":
        related = score_labels(related_gold, related_predicted)
        report |= {
            "related_accuracy": related.accuracy,
            "related_coverage": related.coverage,
            "related_confident_wrong": related.confident_wrong,
            "related_right_when_confident": related.right_when_confident,
            "related_confusion": related.confusion,
            "cross_bee_supersedes_wrong": cross_supersedes_wrong,
        }
    return report
