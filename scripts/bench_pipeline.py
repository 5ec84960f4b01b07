"""Gate pipeline latency: from an utterance reaching the coordinator to the note in every receiving inbox.

    .venv/bin/python scripts/bench_pipeline.py [--runs 3] [--utterances 60] [--sizes 100,500,2000]

In one process, per board size and run: the real :class:`hive.coordinator.pipeline.Pipeline` with 6 bees,
the real gates and engine over the ``local`` judge tier, a board pre-filled with N notes (plausible agent
findings from ``benchlib``; their embeddings warmed, as publishing them would have), ``board.jsonl`` and
``gate.jsonl`` written to a temporary directory, and a ``send`` callback that serialises the ``Notes``
message exactly as the coordinator does and stamps the time. Then new utterances (about 45% routine
narration, the rest findings, dead ends, decisions and blockers) are submitted through
:meth:`Pipeline.submit`, two ways:

- one at a time: one utterance in flight, the next submitted when it is handled;
- bursts of 6: one utterance from every bee at the same moment, the next burst when all six are handled.

Latency of a published note is from ``submit`` to the last ``send`` that carried it (or to the end of its
handling when no bee should get it); model time is excluded because there is no bee model. The delivery cap
is lifted so every note is judged for every other bee (the worst case). Judge calls per published note
are counted at the tier, per gate, to show they stay flat as the board grows.

Same-run baseline: the same pipeline, board and utterances with a ``script:`` judge (regex rules, no model)
in place of ``local``: the pipeline's own bookkeeping, which the ratio separates from judgment.

Target (issue 7): p95 <= 150 ms at 100, 500 and 2,000 notes; judge calls per note flat.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchlib import (
    SUBSYSTEMS,
    header,
    median,
    mixed_utterances,
    percentile,
    plot_path,
    positive_int,
    positive_ints,
    utterance,
)

from hive.coordinator.pipeline import Pipeline
from hive.gates import Gates
from hive.judge.base import Tier, TierResult
from hive.judge.engine import Judge
from hive.judge.local import LocalTier
from hive.judge.questions import Question
from hive.judge.tiers.script import ScriptRule, ScriptTier
from hive.records import InboxItem, Note, NoteKind, Notes, Utterance
from hive.store import JsonlWriter, dumps

GOAL = "Why does the nightly export drop rows?"
BEES = [f"bee-{i}" for i in range(1, 7)]
NOTE_KINDS: dict[str, NoteKind] = {"finding": "finding", "dead_end": "dead_end", "decision": "decision",
                                   "blocker": "blocker"}


class CountingTier:
    """Wraps a tier and counts its calls per gate (the judge calls a note costs)."""

    def __init__(self, inner: Tier) -> None:
        self.inner = inner
        self.id = inner.id
        self.untrusted = inner.untrusted
        self.timeout = inner.timeout
        self.calls: Counter[str] = Counter()

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        self.calls[gate] += 1
        return await self.inner.answer(gate, questions, state)

    async def aclose(self) -> None:
        await self.inner.aclose()


class TimedPipeline(Pipeline):
    """The real pipeline, with an event per handled utterance so the benchmark knows when to go on."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handled: dict[str, float] = {}
        self.waiters: dict[str, asyncio.Event] = {}

    async def handle(self, utterance: Utterance) -> None:
        await super().handle(utterance)
        self.handled[utterance.uid] = time.perf_counter()
        self.waiters[utterance.uid].set()


@dataclass
class Measured:
    published_ms: list[float] = field(default_factory=list)
    withheld_ms: list[float] = field(default_factory=list)
    notes: int = 0
    calls: Counter[str] = field(default_factory=Counter)
    embedded: int = 0
    deliveries: int = 0


def script_rules() -> list[ScriptRule]:
    """The baseline judge: publish what is marked, deliver findings to every bee, relate nothing."""
    kinds = {"FOUND": "finding", "DEAD END": "dead_end", "DECIDED": "decision", "BLOCKED": "blocker"}
    rules = []
    for marker, kind in kinds.items():
        probs = dict.fromkeys(("finding", "dead_end", "decision", "blocker", "other"), 0.02)
        probs[kind] = 0.92
        rules.append(ScriptRule(gate="publish", when={"note": f"^{marker}:"}, answers={"news": 0.95, "kind": probs}))
    rules.append(ScriptRule(gate="publish", answers={"news": 0.05, "kind": {"other": 0.92}}))
    rules.append(ScriptRule(gate="deliver", answers={"useful": 0.9}))
    rules.append(ScriptRule(gate="relate", answers={"relation": {"none": 0.9}}))
    return rules


def board_texts(rng: random.Random, n: int) -> list[tuple[str, str, NoteKind]]:
    """(bee, text, kind) for a pre-filled board: what six bees would have published."""
    kinds = ["finding"] * 64 + ["dead_end"] * 22 + ["decision"] * 10 + ["blocker"] * 4
    out = []
    for i in range(n):
        bee = BEES[i % len(BEES)]
        kind = rng.choice(kinds)
        out.append((bee, utterance(rng, SUBSYSTEMS[i % len(SUBSYSTEMS)], kind), NOTE_KINDS[kind]))
    return out


def warm(tier: LocalTier, texts: Sequence[str]) -> None:
    """Embed and classify texts as publishing them would have (not timed). One text per model call: on
    this CPU a padded batch costs more per text than single texts do."""
    for text in texts:
        tier.note_probs(text)


async def measure(tier: Tier, board: Sequence[tuple[str, str, NoteKind]], texts: Sequence[tuple[str, str]],
                  burst: bool, similarity: Any) -> Measured:
    counting = CountingTier(tier)
    result = Measured()
    last_send: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="hive-bench-pipeline-") as tmp:
        board_file, gate_file = JsonlWriter(Path(tmp) / "board.jsonl"), JsonlWriter(Path(tmp) / "gate.jsonl")

        async def send(bee: str, items: list[InboxItem]) -> None:
            line = dumps(Notes(items=items))  # what the coordinator writes to the bee's stdin
            now = time.perf_counter()
            assert line
            for item in items:
                last_send[item.note] = now
            result.deliveries += 1

        pipeline = TimedPipeline(Gates(Judge([counting]), goal=GOAL), board_file, gate_file, send,
                                 delivery_cap=1_000_000, similarity=similarity)
        for i, angle in enumerate(s.angle for s in SUBSYSTEMS):
            pipeline.add_bee(BEES[i], angle)
        for i, (bee, text, kind) in enumerate(board, 1):
            note = Note(id=f"p-{i:05d}", bee=bee, kind=kind, text=text, score=0.9)
            board_file.append(note)
            pipeline.state.apply(note)
            pipeline.bees[bee].holds.add(note.id)
        workers = [asyncio.create_task(pipeline.worker(bee)) for bee in BEES]
        embedded_before = tier.embedder.texts_embedded if isinstance(tier, LocalTier) else 0
        submitted: dict[str, float] = {}
        seq: Counter[str] = Counter()
        group = len(BEES) if burst else 1
        for start in range(0, len(texts), group):
            events = []
            for bee, text in texts[start:start + group]:
                seq[bee] += 1
                u = Utterance(bee=bee, seq=seq[bee], text=text)
                events.append(pipeline.waiters.setdefault(u.uid, asyncio.Event()))
                submitted[u.uid] = time.perf_counter()
                pipeline.submit(u)
            for event in events:
                await event.wait()
        for bee in BEES:
            pipeline.bee_done(bee)
        await asyncio.gather(*workers)
        board_file.close()
        gate_file.close()
    published = {n.utterance: n.id for n in pipeline.state.notes.values() if n.utterance}
    for uid, t0 in submitted.items():
        note_id = published.get(uid)
        if note_id is None:
            result.withheld_ms.append((pipeline.handled[uid] - t0) * 1000)
        else:
            result.published_ms.append((last_send.get(note_id, pipeline.handled[uid]) - t0) * 1000)
    result.notes = len(published)
    result.calls = counting.calls
    if isinstance(tier, LocalTier):
        result.embedded = tier.embedder.texts_embedded - embedded_before
    return result


def new_utterances(rng: random.Random, n: int) -> list[tuple[str, str]]:
    out = []
    for i in range(n):
        bee = BEES[i % len(BEES)]
        (text,) = mixed_utterances(rng, 1, SUBSYSTEMS[(i + rng.randint(0, 1)) % len(SUBSYSTEMS)])
        out.append((bee, text))
    return out


async def main_async(args: argparse.Namespace) -> None:
    sizes: list[int] = args.sizes
    rng = random.Random(7)
    full_board = board_texts(rng, max(sizes))
    local = LocalTier()
    loading = time.perf_counter()
    local.load()
    print(f"local tier loaded in {(time.perf_counter() - loading) * 1000:.0f} ms; warming the board's embeddings")
    warming = time.perf_counter()
    warm(local, [text for _, text, _ in full_board] + [s.angle for s in SUBSYSTEMS])
    print(f"warmed {len(full_board)} notes in {time.perf_counter() - warming:.0f} s")
    baseline = ScriptTier(script_rules(), id="script")
    rows: list[tuple[int, str, Measured, Measured]] = []
    for size in sizes:
        board = full_board[:size]
        for burst in (False, True):
            runs: list[tuple[Measured, Measured]] = []
            for run in range(args.runs):
                texts = new_utterances(random.Random(f"{size}-{run}-{burst}"), args.utterances)
                measured_local = await measure(local, board, texts, burst, local.similarity)
                measured_base = await measure(baseline, board, texts, burst, None)
                runs.append((measured_local, measured_base))
            merged_local, merged_base = merge([r[0] for r in runs]), merge([r[1] for r in runs])
            rows.append((size, "burst of 6" if burst else "one at a time", merged_local, merged_base))
            report(size, rows[-1][1], merged_local, merged_base, [r[0] for r in runs])
    print()
    print("| board | arrival | notes | p50 ms | p95 ms | script-judge p95 ms | ratio p95 | publish/utt | "
          "relate/note | deliver/note | model texts/note | withheld p95 ms |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, mode, m, b in rows:
        utts = len(m.published_ms) + len(m.withheld_ms)
        p95, base95 = percentile(m.published_ms, 95), percentile(b.published_ms, 95)
        print(f"| {size} | {mode} | {m.notes} | {percentile(m.published_ms, 50):.1f} | {p95:.1f} | {base95:.1f} | "
              f"{p95 / base95:.1f}× | {m.calls['publish'] / utts:.2f} | {m.calls['relate'] / m.notes:.2f} | "
              f"{m.calls['deliver'] / m.notes:.2f} | {m.embedded / m.notes:.2f} | "
              f"{percentile(m.withheld_ms, 95):.1f} |")
    print("target: p95 <= 150 ms at every board size; judge calls per note flat as the board grows")
    if args.plot:
        plot(rows, args.plot)


def merge(results: Sequence[Measured]) -> Measured:
    out = Measured()
    for r in results:
        out.published_ms += r.published_ms
        out.withheld_ms += r.withheld_ms
        out.notes += r.notes
        out.calls.update(r.calls)
        out.embedded += r.embedded
        out.deliveries += r.deliveries
    return out


def report(size: int, mode: str, m: Measured, b: Measured, runs: Sequence[Measured]) -> None:
    per_run = ", ".join(f"{percentile(r.published_ms, 95):.0f}" for r in runs)
    print(f"board {size:5}, {mode:13}: {m.notes} notes, p50 {percentile(m.published_ms, 50):.1f} ms, "
          f"p95 {percentile(m.published_ms, 95):.1f} ms (per run p95: {per_run}; median of runs "
          f"{median([percentile(r.published_ms, 95) for r in runs]):.1f}), script judge p95 "
          f"{percentile(b.published_ms, 95):.1f} ms, judge calls {dict(m.calls)}")


def plot(rows: Sequence[tuple[int, str, Measured, Measured]], path: Path) -> None:
    import matplotlib  # --plot (plot_path) checked that it is installed

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    by_mode: dict[str, list[tuple[int, Measured]]] = defaultdict(list)
    for size, mode, m, _ in rows:
        by_mode[mode].append((size, m))
    for mode, points in by_mode.items():
        sizes = [s for s, _ in points]
        left.plot(sizes, [percentile(m.published_ms, 95) for _, m in points], marker="o", label=f"p95, {mode}")
        left.plot(sizes, [percentile(m.published_ms, 50) for _, m in points], marker=".", ls="--",
                  label=f"p50, {mode}")
        right.plot(sizes, [sum(m.calls.values()) / m.notes for _, m in points], marker="o", label=mode)
    left.axhline(150, color="red", lw=0.8, label="target p95")
    left.set(xscale="log", xlabel="notes on the board", ylabel="ms, utterance → last inbox",
             title="gate pipeline latency (local judge)")
    right.set(xscale="log", xlabel="notes on the board", ylabel="tier calls per published note",
              title="judge calls per note", ylim=(0, None))
    left.legend(fontsize=7)
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=3)
    parser.add_argument("--utterances", type=positive_int, default=60, help="new utterances per run and board size")
    parser.add_argument("--sizes", type=positive_ints, default=[100, 500, 2000],
                        help="board sizes, comma-separated")
    parser.add_argument("--plot", type=plot_path, help="write the curve to this PNG (needs the bench extra)")
    args = parser.parse_args()
    header("gate pipeline latency")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
