"""Sharing efficiency: tokens injected into the bees' contexts under hive's gates, against broadcasting every
utterance to every bee and against sharing nothing, and how many of the notes each bee should have
received it did receive.

    .venv/bin/pip install -e '.[bench]'      # matplotlib, for the plot
    .venv/bin/python scripts/bench_sharing.py [--runs 3] [--per-bee 20] [--delay 1.5] [--plot docs/sharing.png]

The right deliveries are known by construction. Six bees each investigate one subsystem of an imaginary
export service (``benchlib.SUBSYSTEMS``; the bee's ``--angle`` is the subsystem's). Each bee's scripted
utterances are, in order drawn at random:

- routine narration about its own subsystem (45%): should reach nobody;
- findings and dead ends about its own subsystem (32%): should reach nobody else;
- findings and dead ends about another bee's subsystem (16%): should reach that bee;
- decisions and blockers (7%): should reach every other bee.

Every turn waits ``--delay`` seconds (a stand-in for model time; real model turns take several seconds) and
calls a real tool; two closing routine turns (not scored) let the others' last notes land. The run is a
real ``hive start`` with ``--judge local``, once with the default delivery cap (10 plain notes per bee)
and once with the cap lifted. Measured from the run directory:

- tokens injected: the characters of every "Notes from the other investigators" message in the bees'
  transcripts (what actually entered a context), / 4 (a common estimate for English and code);
- recall: of the (utterance, bee) pairs that should have been delivered, the share that was (a
  ``Delivery`` record of the note published from that utterance to that bee; corrections count);
- recall per bee: for each bee, how many of the notes it should have received it did receive, as
  received / should have received (summed over the runs in the closing table);
- recall of the cross-subsystem findings alone (the pairs only the judged deliver gate can get right;
  decisions and blockers go to everyone by rule), and the deliver gate's ``useful`` probability where a
  delivery should and should not be made;
- precision: of the deliveries, the share that should have been made.

The alternatives are computed from the same utterances: broadcast sends every utterance to the five other
bees, rendered as hive renders a note but without its kind (``- bee-N: <text>``: nothing classifies them),
with recall 1 and precision the share of those that should have been sent; share-nothing injects nothing and
has recall 0.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchlib import (
    SUBSYSTEMS,
    header,
    make_repo,
    median,
    plot_path,
    positive_int,
    run_watched,
    script_turns,
    start_args,
    utterance,
    write_json,
)

from hive.bee.prompts import LAST_CALL_INTRO, NOTES_HEADER
from hive.records import BOARD_ADAPTER, Delivery, GateDecision, Note
from hive.store import read_all

PROBLEM = "Why does the nightly export drop rows?"
BEES = [f"bee-{i + 1}" for i in range(len(SUBSYSTEMS))]
CHARS_PER_TOKEN = 4
PLAN = [("routine", "own")] * 45 + [("finding", "own")] * 24 + [("dead_end", "own")] * 8 + \
    [("finding", "other")] * 12 + [("dead_end", "other")] * 4 + [("decision", "all")] * 5 + [("blocker", "all")] * 2


@dataclass(frozen=True)
class Planned:
    bee: str
    seq: int
    text: str
    should: frozenset[str]
    """The bees that should receive it."""


def plan(rng: random.Random, per_bee: int) -> list[Planned]:
    planned = []
    for index, bee in enumerate(BEES):
        for seq in range(1, per_bee + 1):
            kind, about = rng.choice(PLAN)
            target = index
            if about == "other":
                target = rng.choice([i for i in range(len(BEES)) if i != index])
            text = utterance(rng, SUBSYSTEMS[target], kind)
            if kind == "routine":
                should: frozenset[str] = frozenset()
            elif about == "all":
                should = frozenset(b for b in BEES if b != bee)
            elif about == "other":
                should = frozenset({BEES[target]})
            else:
                should = frozenset()
            planned.append(Planned(bee, seq, text, should))
    return planned


TAIL = ["Waiting a moment for notes from the others before I write my report.",
        "Nothing new arrived that changes my picture; writing the report next."]
"""Two closing routine turns per bee, not scored: the others' last notes need a turn to land in a context."""


def write_script(root: Path, planned: list[Planned], delay: float) -> Path:
    bees = {bee: script_turns([p.text for p in planned if p.bee == bee] + TAIL, delay=delay) for bee in BEES}
    return write_json(root / "script.json", {"bees": bees, "answer": "The batching drops the final partial batch."})


def injected_chars_of(record: dict[str, object]) -> int:
    """The characters of others' notes one transcript line put into a bee's context: a notes message, or a last
    call (the notes that arrived while the bee wrote its report, with the question they come with)."""
    content = record.get("content")
    if record.get("role") != "user" or not isinstance(content, str):
        return 0
    return len(content) if content.startswith((NOTES_HEADER, LAST_CALL_INTRO)) else 0


def injected_chars(run_dir: Path) -> int:
    return sum(injected_chars_of(json.loads(line)) for bee in BEES
               for line in (run_dir / "bees" / bee / "transcript.jsonl").read_text().splitlines())


PerBee = dict[str, tuple[int, int]]
"""For each bee: (notes received, notes it should have received)."""


def per_bee(should: set[tuple[str, str]], delivered: set[tuple[str | None, str]]) -> PerBee:
    return {bee: (sum(1 for pair in should if pair[1] == bee and pair in delivered),
                  sum(1 for _, to in should if to == bee)) for bee in BEES}


def score_run(run_dir: Path, planned: list[Planned]) -> tuple[dict[str, float], PerBee]:
    board, _ = read_all(run_dir / "board.jsonl", BOARD_ADAPTER)
    gates, _ = read_all(run_dir / "gate.jsonl", GateDecision)
    by_uid = {f"{p.bee}#{p.seq}": p for p in planned}
    note_uid = {r.id: r.utterance for r in board if isinstance(r, Note)}
    delivered = {(note_uid.get(r.note), r.to) for r in board if isinstance(r, Delivery)}
    should = {(uid, to) for uid, p in by_uid.items() for to in p.should}
    hits = len(should & delivered)
    # the cross-subsystem findings: the pairs only the judge's deliver gate can get right
    judged_should = {(uid, to) for uid, to in should if len(by_uid[uid].should) == 1}
    useful_p: dict[bool, list[float]] = {True: [], False: []}
    for g in gates:
        uid = note_uid.get(g.note or "")
        if g.gate == "deliver" and g.source != "rule" and uid is not None and g.score is not None:
            useful_p[(uid, g.to) in should].append(g.score)
    scores = {
        "recall_judged": len(judged_should & delivered) / len(judged_should) if judged_should else 1.0,
        "p_should": median(useful_p[True]),
        "p_should_not": median(useful_p[False]),
        "max_p_should": max(useful_p[True], default=float("nan")),
        "tokens": injected_chars(run_dir) / CHARS_PER_TOKEN,
        "recall": hits / len(should),
        "precision": hits / len(delivered) if delivered else 1.0,
        "deliveries": len(delivered),
        "notes": len(note_uid),
        "should": len(should),
    }
    return scores, per_bee(should, delivered)


def should_per_bee(planned: list[Planned]) -> dict[str, int]:
    return {bee: sum(bee in p.should for p in planned) for bee in BEES}


def broadcast(planned: list[Planned]) -> dict[str, float]:
    chars = sum(len(f"- {p.bee}: {p.text}\n") * (len(BEES) - 1) for p in planned)
    should = sum(len(p.should) for p in planned)
    sent = len(planned) * (len(BEES) - 1)
    return {"tokens": chars / CHARS_PER_TOKEN, "recall": 1.0, "precision": should / sent, "deliveries": sent,
            "should": should, "recall_judged": 1.0}


def plot(rows: dict[str, dict[str, float]], path: Path) -> None:
    import matplotlib  # --plot (plot_path) checked that it is installed

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(rows)
    colors = ["#9e9e9e", "#f2a541", "#3a7ca5", "#d9d9d9"][: len(names)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    bars = left.bar(names, [rows[n]["tokens"] for n in names], color=colors)
    left.bar_label(bars, labels=[f"{rows[n]['tokens']:,.0f}" for n in names], fontsize=8)
    left.set(ylabel="tokens injected into the 6 bees' contexts (chars / 4)", title="context cost per run")
    x = range(len(names))
    width = 0.38
    r = right.bar([i - width / 2 for i in x], [rows[n]["recall"] * 100 for n in names], width, label="recall",
                  color="#3a7ca5")
    p = right.bar([i + width / 2 for i in x], [rows[n]["precision"] * 100 for n in names], width,
                  label="precision", color="#f2a541")
    right.bar_label(r, fmt="%.0f", fontsize=8)
    right.bar_label(p, labels=[f"{rows[n]['precision'] * 100:.0f}" if rows[n]["precision"] == rows[n]["precision"]
                               else "n/a" for n in names], fontsize=8)
    right.set_xticks(list(x), names)
    right.set(ylabel="%", ylim=(0, 110), title="notes each bee should have received")
    right.legend(fontsize=8)
    for axis in (left, right):
        axis.tick_params(axis="x", labelsize=8)
    fig.suptitle("hive gates vs broadcast-everything vs share-nothing (6 scripted bees, local judge)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot: {path}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=3)
    parser.add_argument("--per-bee", type=positive_int, default=20, help="utterances per bee")
    parser.add_argument("--delay", type=float, default=1.5, help="seconds per model turn")
    parser.add_argument("--plot", type=plot_path, help="write the picture to this PNG (e.g. docs/sharing.png)")
    args = parser.parse_args()
    header("sharing efficiency")
    configs = {"hive (cap 10)": (), "hive (no cap)": ("--delivery-cap", "100000")}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in configs}
    baselines: list[dict[str, float]] = []
    bee_counts: dict[str, list[PerBee]] = {name: [] for name in configs}
    owed: list[dict[str, int]] = []
    with tempfile.TemporaryDirectory(prefix="hive-bench-sharing-") as tmp:
        root = Path(tmp)
        repo = make_repo(root)
        for run in range(args.runs):
            planned = plan(random.Random(run), args.per_bee)
            script = write_script(root, planned, args.delay)
            baselines.append(broadcast(planned))
            owed.append(should_per_bee(planned))
            for name, extra in configs.items():
                runs_dir = root / f"runs-{run}-{len(results[name])}-{'cap' if not extra else 'nocap'}"
                runs_dir.mkdir()
                m = run_watched(start_args(PROBLEM, repo, script, runs_dir, "local", [s.angle for s in SUBSYSTEMS],
                                           *extra), cwd=root, runs_dir=runs_dir)
                if m.returncode != 0:
                    raise SystemExit(f"hive start failed ({m.returncode}):\n{m.stderr[-2000:]}")
                s, by_bee = score_run(m.run_dir, planned)
                results[name].append(s)
                bee_counts[name].append(by_bee)
                print(f"run {run + 1}, {name}: {s['tokens']:,.0f} tokens injected, recall {s['recall']:.0%} "
                      f"(cross-subsystem findings {s['recall_judged']:.0%}; deliver p median {s['p_should']:.2f} "
                      f"where it should, {s['p_should_not']:.2f} where not, max {s['max_p_should']:.2f}), "
                      f"({s['should']:.0f} should), precision {s['precision']:.0%}, {s['deliveries']:.0f} deliveries, "
                      f"{s['notes']:.0f} notes, wall {m.wall_s:.1f} s")
                print(f"run {run + 1}, {name}, per bee (received / should have received): "
                      + ", ".join(f"{bee} {got}/{want}" for bee, (got, want) in by_bee.items()))
            b = baselines[-1]
            print(f"run {run + 1}, broadcast: {b['tokens']:,.0f} tokens, precision {b['precision']:.0%}")
    rows: dict[str, dict[str, float]] = {
        "broadcast": {k: median([b[k] for b in baselines]) for k in baselines[0]},
        **{name: {k: median([r[k] for r in rs]) for k in rs[0]} for name, rs in results.items()},
        "share-nothing": {"tokens": 0.0, "recall": 0.0, "precision": float("nan"), "deliveries": 0.0,
                          "recall_judged": 0.0, "should": median([b["should"] for b in baselines])},
    }
    print(f"\nmedians over {args.runs} runs, {args.per_bee * len(BEES)} utterances per run:")
    print("| strategy | tokens injected | vs broadcast | deliveries | recall | recall, cross-subsystem findings | "
          "precision |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    full = rows["broadcast"]["tokens"]
    for name, row in rows.items():
        print(f"| {name} | {row['tokens']:,.0f} | {row['tokens'] / full:.1%} | {row['deliveries']:.0f} | "
              f"{row['recall']:.0%} | {row['recall_judged']:.0%} | "
              f"{'n/a' if row['precision'] != row['precision'] else format(row['precision'], '.0%')} |")
    print_per_bee(bee_counts, owed)
    if args.plot:
        plot(rows, args.plot)


def print_per_bee(bee_counts: dict[str, list[PerBee]], owed: list[dict[str, int]]) -> None:
    """For each strategy and bee: of the notes the bee should have received, how many it did, summed over
    the runs. Broadcast delivers every one, share-nothing none."""
    want = {bee: sum(o[bee] for o in owed) for bee in BEES}
    totals: dict[str, dict[str, int]] = {"broadcast": dict(want)}
    for name, runs in bee_counts.items():
        totals[name] = {bee: sum(run[bee][0] for run in runs) for bee in BEES}
    totals["share-nothing"] = dict.fromkeys(BEES, 0)
    print(f"\nper bee, notes received / notes it should have received, summed over {len(owed)} run(s):")
    print("| strategy | " + " | ".join(f"{bee} ({s.name})" for bee, s in zip(BEES, SUBSYSTEMS, strict=True))
          + " | lowest |")
    print("|---|" + "---:|" * (len(BEES) + 1))
    for name, got in totals.items():
        cells = [f"{got[bee]}/{want[bee]} ({got[bee] / want[bee]:.0%})" if want[bee] else "0/0" for bee in BEES]
        lowest = min((got[bee] / want[bee] for bee in BEES if want[bee]), default=float("nan"))
        print(f"| {name} | " + " | ".join(cells) + f" | {lowest:.0%} |")


if __name__ == "__main__":
    main()
