"""Benchmark the ``local`` judge tier: load time, resident memory, amortized latency per gate question.

    .venv/bin/python scripts/bench_judge.py [--notes N] [--texts FILE.jsonl] [--json]

It replays a live run: every note is asked publish (news + kind, one call), then deliver to each of three
bee foci (the foci are embedded once per run), then relate against the two previous notes. Reported:

- ``load_s``: a fresh process importing the tier and loading model + heads;
- ``rss_mb``: resident memory of the benchmarking process after the replay (one tier, model loaded);
- ``per_question_ms``: p50/p95 over calls of (call latency / questions in the call), and the mean
  (total time / total questions), pooled over the three gates;
- ``per_question_ms_by_gate``: the same p50/p95 for each gate's calls alone (publish, deliver, relate);
- ``bare_model_ms_per_text``: the embedding model alone on the same texts (one at a time, no cache), and
  ``ratio_to_bare_model``: the whole judge's time over the bare model's time on those texts.

Texts come from ``--texts`` (a JSONL file with a ``text`` or ``note`` field; default: the shared
development set if present, else the tier's own training examples).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchlib import existing_file, positive_int

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hive.judge.local.tier import RELATIONS  # noqa: E402
from hive.judge.questions import BooleanQuestion, ChoiceQuestion, Question  # noqa: E402

NEWS = BooleanQuestion("news", "Would this help the other bees?", "relate")
KIND = ChoiceQuestion("kind", "What is this note?", {
    "finding": "", "dead_end": "", "decision": "", "blocker": "", "other": ""}, escape="other")
USEFUL = BooleanQuestion("useful", "Is the note useful for focus?", "relate")
RELATION = ChoiceQuestion("relation", "What does later say about earlier?",
                          {**{r: "" for r in RELATIONS}, "none": ""}, escape="none")
FOCI = (
    "reproduce the reported failure with a minimal script",
    "trace the root cause in the module named by the traceback",
    "check the documentation and the changelog for the intended behaviour",
)
LOAD_PROBE = (
    "import time; t = time.perf_counter(); from hive.judge.local import LocalTier; "
    "LocalTier().load(); print(time.perf_counter() - t)"
)


def default_texts() -> Path:
    shared = ROOT.parent / "shared" / "evals" / "publish.jsonl"
    return shared if shared.exists() else ROOT / "hive" / "judge" / "local" / "data" / "publish.jsonl"


def read_texts(path: Path, limit: int) -> list[str]:
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    texts = [row.get("text") or row.get("note") or "" for row in rows]
    return list(dict.fromkeys(t for t in texts if t))[:limit]


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def replay(texts: list[str]) -> dict[str, object]:
    from hive.judge.local import LocalTier

    tier = LocalTier()
    tier.load()
    per_question: list[float] = []
    by_gate: dict[str, list[float]] = {"publish": [], "deliver": [], "relate": []}
    questions = 0
    start = time.perf_counter()
    for index, text in enumerate(texts):
        calls: list[tuple[str, Sequence[Question], Mapping[str, Any]]] = [
            ("publish", [NEWS, KIND], {"note": text, "goal": "", "focus": FOCI[0], "bee": "b1"}),
            *(("deliver", [USEFUL], {"note": text, "kind": "finding", "from_bee": "b1", "focus": f})
              for f in FOCI),
            *(("relate", [RELATION], {"earlier": f"b2 (finding): {earlier}", "later": f"b1 (finding): {text}",
                                      "same_bee": False, "goal": ""})
              for earlier in texts[max(0, index - 2):index]),
        ]
        for gate, asked, state in calls:
            t = time.perf_counter()
            await tier.answer(gate, asked, state)
            per_question.append((time.perf_counter() - t) * 1000 / len(asked))
            by_gate[gate].append(per_question[-1])
            questions += len(asked)
    judge_ms = (time.perf_counter() - start) * 1000
    judge_rss = rss_mb()
    await tier.aclose()

    bare = LocalTier().embedder
    bare.load()
    unique = list(dict.fromkeys([*texts, *FOCI]))
    t = time.perf_counter()
    for text in unique:
        bare._run([text])  # the model alone: no cache, no heads
    bare_ms = (time.perf_counter() - t) * 1000
    return {
        "notes": len(texts),
        "questions": questions,
        "per_question_ms": {"p50": round(statistics.median(per_question), 2),
                            "p95": round(percentile(per_question, 0.95), 2),
                            "mean": round(judge_ms / questions, 2)},
        "per_question_ms_by_gate": {gate: {"p50": round(statistics.median(ms), 2) if ms else None,
                                           "p95": round(percentile(ms, 0.95), 2) if ms else None,
                                           "calls": len(ms)}
                                    for gate, ms in by_gate.items()},
        "bare_model_ms_per_text": round(bare_ms / len(unique), 2),
        "ratio_to_bare_model": round(judge_ms / bare_ms, 3),
        "rss_mb": round(judge_rss, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--notes", type=positive_int, default=60)
    parser.add_argument("--texts", type=existing_file, default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    texts = read_texts(args.texts or default_texts(), args.notes)
    loads = []
    for _ in range(3):
        probe = subprocess.run([sys.executable, "-c", LOAD_PROBE], cwd=ROOT, capture_output=True, text=True,
                               check=True)
        loads.append(float(probe.stdout.strip()))
    report = {"load_s": round(min(loads), 3), "load_s_runs": [round(x, 3) for x in loads],
              **asyncio.run(replay(texts))}
    print(json.dumps(report, indent=None if args.json else 2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
