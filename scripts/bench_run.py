"""Orchestration overhead of a whole run: a scripted 6-bee ``hive start`` with 300 utterances and no model
delay, with the gates judging (``--judge local``) against the same run with every gate ``off``.

    .venv/bin/python scripts/bench_run.py [--runs 3] [--utterances 300]

Each run is a real ``hive start`` (coordinator, six bee processes, real tools: every turn calls ``grep``) on a
small repository, with a ``script:`` model whose turns reply at once: 50 utterances per bee in the mix a bee
produces (``benchlib``: ~45% routine narration, findings, dead ends, decisions, blockers), then a report.
The two configurations alternate, so load drifts hit both alike. Measured per run, from outside:

- wall: seconds from spawning ``hive start`` to its exit;
- coordinator CPU: the coordinator's own user+system seconds (``/proc/<pid>/stat``, sampled every 20 ms
  until it exits; short by at most one sample);
- total CPU: coordinator plus every bee (``wait4`` rusage of the run);
- notes, deliveries and gate decisions, from the run directory.

With gates ``off`` the publish gate still publishes marked utterances by rule and decisions and blockers
are still delivered by rule; nothing is judged, and the local model is never loaded. The ratio of the two
medians is the cost of judgment itself; the difference is its absolute cost per utterance.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from benchlib import (
    SUBSYSTEMS,
    RunMeasurement,
    header,
    make_repo,
    median,
    mixed_utterances,
    positive_int,
    run_watched,
    script_turns,
    start_args,
    write_json,
)

from hive.records import BOARD_ADAPTER, Delivery, GateDecision, Note, RunInfo
from hive.store import read_all

PROBLEM = "Why does the nightly export drop rows?"
CONFIGS = {"gates active (local judge)": ("local", ()), "gates off": ("local", ("--gate-mode", "off"))}


def write_script(root: Path, utterances: int, seed: int) -> Path:
    rng = random.Random(seed)
    per_bee = utterances // len(SUBSYSTEMS)
    bees = {f"bee-{i + 1}": script_turns(mixed_utterances(rng, per_bee, s)) for i, s in enumerate(SUBSYSTEMS)}
    return write_json(root / "script.json", {"bees": bees, "answer": "The batching drops the final partial batch."})


def judged(decision: GateDecision) -> bool:
    """Whether the judge was asked for this decision. A gate that is ``off`` still writes its rows (publish: one
    per utterance, source ``fallback``, reason ``off``), so a source other than ``rule`` is not enough."""
    return decision.source != "rule" and decision.mode != "off"


def summarize(m: RunMeasurement) -> dict[str, float]:
    info = RunInfo.model_validate_json((m.run_dir / "run.json").read_bytes())
    board, _ = read_all(m.run_dir / "board.jsonl", BOARD_ADAPTER)
    gates, _ = read_all(m.run_dir / "gate.jsonl", GateDecision)
    return {
        "wall": m.wall_s,
        "coordinator_cpu": m.coordinator_cpu_s,
        "total_cpu": m.total_cpu_s,
        # run.json carries each bee's utterance count as an extra field (the record tolerates extras)
        "utterances": sum(int((b.model_extra or {}).get("utterances", 0)) for b in info.bees),
        "notes": sum(isinstance(r, Note) for r in board),
        "deliveries": sum(isinstance(r, Delivery) for r in board),
        "judged": sum(judged(g) for g in gates),
        "decisions": len(gates),
        "reported": sum(b.outcome == "reported" for b in info.bees),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=positive_int, default=3)
    parser.add_argument("--utterances", type=positive_int, default=300, help="in total, split over the 6 bees")
    args = parser.parse_args()
    if args.utterances < len(SUBSYSTEMS):
        parser.error(f"argument --utterances: {args.utterances} is fewer than one per bee ({len(SUBSYSTEMS)} bees)")
    header("orchestration overhead of a whole run")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in CONFIGS}
    with tempfile.TemporaryDirectory(prefix="hive-bench-run-") as tmp:
        root = Path(tmp)
        repo = make_repo(root)
        for run in range(args.runs):
            script = write_script(root, args.utterances, seed=run)
            for name, (judge, extra) in CONFIGS.items():
                runs_dir = root / f"runs-{run}-{len(results[name])}-{name.split()[1]}"
                runs_dir.mkdir()
                angles = [s.angle for s in SUBSYSTEMS]
                m = run_watched(start_args(PROBLEM, repo, script, runs_dir, judge, angles, *extra), cwd=root,
                                runs_dir=runs_dir)
                if m.returncode != 0:
                    raise SystemExit(f"hive start failed ({m.returncode}):\n{m.stderr[-2000:]}")
                s = summarize(m)
                results[name].append(s)
                print(f"run {run + 1}, {name}: wall {s['wall']:.2f} s, coordinator CPU {s['coordinator_cpu']:.2f} s, "
                      f"total CPU {s['total_cpu']:.2f} s, {s['utterances']:.0f} utterances, {s['notes']:.0f} notes, "
                      f"{s['deliveries']:.0f} deliveries, {s['judged']:.0f} judged decisions, "
                      f"{s['reported']:.0f}/6 reported")
    print(f"\nmedians over {args.runs} runs:")
    print("| configuration | wall s | coordinator CPU s | total CPU s | utterances | notes | deliveries | judged |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    med = {name: {k: median([r[k] for r in rs]) for k in rs[0]} for name, rs in results.items()}
    for name, row in med.items():
        print(f"| {name} | {row['wall']:.2f} | {row['coordinator_cpu']:.2f} | {row['total_cpu']:.2f} | "
              f"{row['utterances']:.0f} | {row['notes']:.0f} | {row['deliveries']:.0f} | {row['judged']:.0f} |")
    on, off = med["gates active (local judge)"], med["gates off"]
    print(f"cost of judgment: wall {on['wall'] / off['wall']:.2f}x (+{on['wall'] - off['wall']:.2f} s), coordinator "
          f"CPU {on['coordinator_cpu'] / off['coordinator_cpu']:.2f}x "
          f"(+{(on['coordinator_cpu'] - off['coordinator_cpu']) / on['utterances'] * 1000:.1f} ms per utterance)")


if __name__ == "__main__":
    main()
