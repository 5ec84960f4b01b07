"""The local judge's own time per note, without the embedding model: what ``ratio_to_bare_model`` adds.

    .venv/bin/python scripts/bench_judge_overhead.py [--root CHECKOUT] [--runs N] [--texts FILE.jsonl]

``scripts/bench_judge.py`` compares two passes made one after the other, so on a shared machine its ratio
moves with the load by more than the judge layer costs. This replays the same questions (publish, deliver to
three foci, relate to the two previous notes) with the model's vectors computed beforehand and served from a
table, so only the judge layer is timed: features, heads, caches, thread hops. ``--root`` measures another
checkout (e.g. a ``git archive`` of an older commit) with the same texts. Reported: the median over
``--runs`` fresh tiers of the judge time per note, in ms; the ratio to the bare model is about
1 + (60/63) * overhead / (bare model ms per text) for bench_judge.py's 60 notes and 3 foci.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import statistics
import sys
import time
from pathlib import Path

from benchlib import existing_dir, existing_file, positive_int

ROOT = Path(__file__).resolve().parent.parent


def checkout(text: str) -> Path:
    """An argparse ``type`` for ``--root``: a directory holding the local tier and bench_judge.py, or the numbers
    would be this checkout's under another name (Python imports what it finds next on its path)."""
    root = existing_dir(text)
    if not (root / "hive" / "judge" / "local").is_dir() or not (root / "scripts" / "bench_judge.py").is_file():
        raise argparse.ArgumentTypeError(f"{text!r} holds no hive/judge/local and scripts/bench_judge.py")
    return root


async def replay(texts: list[str], vectors: dict[str, object]) -> float:
    bench = importlib.import_module("bench_judge")
    local = importlib.import_module("hive.judge.local")
    features = importlib.import_module("hive.judge.local.features")
    for name in ("cue_hits", "content_words", "identifiers"):
        cached = getattr(features, name, None)
        if hasattr(cached, "cache_clear"):
            cached.cache_clear()  # a fresh tier meets every text for the first time
    tier = local.LocalTier()
    tier.load()
    tier.embedder._run = lambda batch: [vectors[text] for text in batch]
    start = time.perf_counter()
    for index, text in enumerate(texts):
        calls = [
            ("publish", [bench.NEWS, bench.KIND], {"note": text, "goal": "", "focus": bench.FOCI[0], "bee": "b1"}),
            *(("deliver", [bench.USEFUL], {"note": text, "kind": "finding", "from_bee": "b1", "focus": f})
              for f in bench.FOCI),
            *(("relate", [bench.RELATION], {"earlier": f"b2 (finding): {earlier}", "later": f"b1 (finding): {text}",
                                            "same_bee": False, "goal": ""})
              for earlier in texts[max(0, index - 2):index]),
        ]
        for gate, asked, state in calls:
            await tier.answer(gate, asked, state)
    return (time.perf_counter() - start) * 1000 / len(texts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=checkout, default=ROOT, help="checkout whose hive/ and scripts/ to measure")
    parser.add_argument("--runs", type=positive_int, default=7)
    parser.add_argument("--notes", type=positive_int, default=60)
    parser.add_argument("--texts", type=existing_file, default=None)
    args = parser.parse_args(argv)
    root = args.root.resolve()
    sys.path[:0] = [str(root), str(root / "scripts")]
    bench = importlib.import_module("bench_judge")
    local = importlib.import_module("hive.judge.local")
    texts = bench.read_texts(args.texts or bench.default_texts(), args.notes)
    model = local.LocalTier().embedder
    model.load()
    unique = list(dict.fromkeys([*texts, *bench.FOCI]))
    vectors = dict(zip(unique, model._run(unique), strict=True))
    runs = [asyncio.run(replay(texts, vectors)) for _ in range(args.runs)]
    print(json.dumps({"root": str(root), "notes": len(texts), "judge_ms_per_note_without_model":
                      round(statistics.median(runs), 2), "runs": [round(r, 2) for r in runs]}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
