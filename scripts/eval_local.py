"""Measure the ``local`` judge tier on labelled gate items (the JSONL format of ../shared/evals).

    .venv/bin/python scripts/eval_local.py [--evals DIR] [--json]

Per gate: n, accuracy (an unsure answer is never correct), coverage (share answered confidently),
confident_wrong (share answered confidently and wrongly), macro-F1 for choices, and latency per item and
per question. The tier is asked exactly as a live run would ask it: the questions of one item in one call,
embeddings cached across gates (publish embeds a note, deliver and relate reuse it). The bars are the
gates' own: boolean yes ≥ 0.8 / no ≤ 0.2, a choice picked at ≥ 0.6, a cross-bee ``supersedes`` at ≥ 0.9.

Relate also reports related-vs-none: "related" when the tier does not confidently pick ``none``.
Files that are absent are skipped with a note.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchlib import existing_dir

from hive.judge.local import LocalTier
from hive.judge.questions import BooleanQuestion, ChoiceQuestion

DEFAULT_EVALS = Path(__file__).resolve().parent.parent.parent / "shared" / "evals"
NEWS = BooleanQuestion("news", "Would this note help the other bees on the goal who have not seen it?", "relate")
KIND = ChoiceQuestion("kind", "What is this note?", {
    "finding": "a fact observed", "dead_end": "an approach that failed", "decision": "a committed approach",
    "blocker": "something outside the problem stops progress", "other": "routine progress"}, escape="other")
USEFUL = BooleanQuestion("useful", "Is the note useful for the work described in focus?", "relate")
RELATION = ChoiceQuestion("relation", "What does later say about earlier?", {
    "supersedes": "replaces it", "contradicts": "conflicts with it", "supports": "confirms it",
    "none": "no bearing"}, escape="none")


def boolean_zone(p: float) -> bool | None:
    return True if p >= 0.8 else False if p <= 0.2 else None


def pick(probs: dict[str, float], bars: dict[str, float] | None = None) -> str | None:
    option = max(probs, key=lambda o: probs[o])
    return option if probs[option] >= (bars or {}).get(option, 0.6) else None


def macro_f1(pairs: list[tuple[str, str | None]], labels: list[str]) -> float:
    scores = []
    for label in labels:
        tp = sum(1 for gold, got in pairs if gold == label and got == label)
        fp = sum(1 for gold, got in pairs if gold != label and got == label)
        fn = sum(1 for gold, got in pairs if gold == label and got != label)
        scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
    return round(sum(scores) / len(scores), 4)


def summary(pairs: list[tuple[Any, Any]], latencies: list[float], questions: int) -> dict[str, Any]:
    n = len(pairs)
    confident = [(g, p) for g, p in pairs if p is not None]
    ordered = sorted(latencies)
    return {
        "n": n,
        "accuracy": round(sum(1 for g, p in confident if g == p) / n, 4),
        "coverage": round(len(confident) / n, 4),
        "confident_wrong": round(sum(1 for g, p in confident if g != p) / n, 4),
        "latency_ms_p50": round(statistics.median(ordered), 2),
        "latency_ms_p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
        "latency_ms_p50_per_question": round(statistics.median(ordered) / questions, 2),
    }


async def timed(tier: LocalTier, gate: str, questions: list[Any], state: dict[str, Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    result = await tier.answer(gate, questions, state)
    return result, (time.perf_counter() - start) * 1000


async def evaluate(evals: Path) -> dict[str, Any]:
    tier = LocalTier()
    tier.load()
    report: dict[str, Any] = {}
    publish_file, deliver_file, relate_file = (evals / f"{g}.jsonl" for g in ("publish", "deliver", "relate"))
    if publish_file.exists():
        items = [json.loads(line) for line in publish_file.read_text().splitlines() if line.strip()]
        kinds, news, latencies = [], [], []
        for item in items:
            state = {"note": item["text"], "goal": item.get("problem", ""), "focus": "", "bee": item.get("bee", "")}
            result, ms = await timed(tier, "publish", [NEWS, KIND], state)
            latencies.append(ms)
            gold_kind = "other" if item["kind"] == "routine" else item["kind"]
            kinds.append((gold_kind, pick(dict(result.answers["kind"].probs))))
            news.append((item["news"], boolean_zone(result.answers["news"].p)))
        labels = ["finding", "dead_end", "decision", "blocker", "other"]
        report["publish"] = {
            **summary(kinds, latencies, 2),
            "macro_f1": macro_f1(kinds, labels),
            "news": summary(news, latencies, 2),
            "confusion": {g: dict(Counter(p or "unsure" for gg, p in kinds if gg == g)) for g in labels},
        }
    else:
        print(f"skipping publish: {publish_file} not found", file=sys.stderr)
    if deliver_file.exists():
        items = [json.loads(line) for line in deliver_file.read_text().splitlines() if line.strip()]
        pairs, latencies = [], []
        for item in items:
            state = {"note": item["note"], "focus": item["focus"], "kind": "finding", "from_bee": "bee-1"}
            result, ms = await timed(tier, "deliver", [USEFUL], state)
            latencies.append(ms)
            pairs.append((item["useful"], boolean_zone(result.answers["useful"].p)))
        report["deliver"] = summary(pairs, latencies, 1)
    else:
        print(f"skipping deliver: {deliver_file} not found", file=sys.stderr)
    if relate_file.exists():
        items = [json.loads(line) for line in relate_file.read_text().splitlines() if line.strip()]
        pairs, related, latencies = [], [], []
        cross_supersedes_wrong = 0
        for item in items:
            state = {"earlier": f"{item.get('a_bee', 'bee-1')} (finding): {item['a']}",
                     "later": f"{item.get('b_bee', 'bee-2')} (finding): {item['b']}",
                     "same_bee": item["same_bee"], "goal": item.get("problem", "")}
            result, ms = await timed(tier, "relate", [RELATION], state)
            latencies.append(ms)
            probs = dict(result.answers["relation"].probs)
            got = pick(probs, {} if item["same_bee"] else {"supersedes": 0.9})
            gold = "none" if item["relation"] == "unrelated" else item["relation"]
            if item["same_bee"] and gold == "contradicts":
                gold = "supersedes"
            if got == "contradicts" and item["same_bee"]:
                got = "supersedes"
            pairs.append((gold, got))
            related.append((gold != "none", got != "none"))
            cross_supersedes_wrong += int(not item["same_bee"] and got == "supersedes" and gold != "supersedes")
        report["relate"] = {
            **summary(pairs, latencies, 1),
            "macro_f1": macro_f1(pairs, ["supersedes", "contradicts", "supports", "none"]),
            "related_vs_none_accuracy": round(sum(1 for g, p in related if g == p) / len(related), 4),
            "cross_bee_supersedes_confidently_wrong": cross_supersedes_wrong,
        }
    else:
        print(f"skipping relate: {relate_file} not found", file=sys.stderr)
    report["texts_embedded"] = tier.embedder.texts_embedded
    await tier.aclose()
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evals", type=existing_dir, default=DEFAULT_EVALS)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args(argv)
    report = asyncio.run(evaluate(args.evals))
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
