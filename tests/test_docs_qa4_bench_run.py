"""scripts/bench_run.py counts judged decisions as docs/benchmarks.md §5 reads them: none with every gate off."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from bench_run import judged

from hive.records import GateDecision


def test_a_gate_that_is_off_judges_nothing() -> None:
    """With `--gate-mode off` the script reported 294 judged decisions: the publish gate's rows (source
    fallback, reason off) counted as judged."""
    off = GateDecision(id="g-000001", gate="publish", outcome="publish", source="fallback", reason="off", mode="off")
    unsure = GateDecision(id="g-000002", gate="publish", outcome="withhold", source="fallback", reason="unsure",
                          mode="active")
    by_judge = GateDecision(id="g-000003", gate="deliver", outcome="deliver", source="judge", mode="active")
    shadow = GateDecision(id="g-000004", gate="relate", outcome="none", source="shadow", mode="shadow")
    by_rule = GateDecision(id="g-000005", gate="publish", outcome="duplicate", source="rule", mode="active")
    assert [judged(d) for d in (off, unsure, by_judge, shadow, by_rule)] == [False, True, True, True, False]
