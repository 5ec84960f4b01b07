"""``hive start`` loads the judge's model while the bees start only when something will ask the judge.

docs/benchmarks.md's re-check found a run with every gate ``off`` costing the coordinator more CPU than before
(2.06 s against 1.25 s). Since f6d9065 the coordinator loaded the local model at start whatever the gate modes:
with every gate off nothing asks the judge, yet the run paid the model's load (~0.7 s of CPU) and its ~250 MB
(the coordinator's peak went from 56 MB to 310 MB).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hive.coordinator import Coordinator
from hive.coordinator.options import StartOptions
from hive.records import GateMode
from tests.hive_runs import LoadingTier, make_repo, report, write_script

pytestmark = pytest.mark.slow

ALL_OFF: dict[str, GateMode] = {"publish": "off", "deliver": "off", "relate": "off"}


@pytest.mark.parametrize(("modes", "race", "loads"), [
    (ALL_OFF, False, False),
    (ALL_OFF, True, True),  # the answer gate asks the judge whatever the other gates' modes
    ({**ALL_OFF, "relate": "shadow"}, False, True),  # a gate in shadow asks the judge and logs what it said
])
def test_the_judge_loads_at_start_only_when_something_will_ask_it(tmp_path: Path, modes: dict[str, GateMode],
                                                                   race: bool, loads: bool) -> None:
    script = write_script(tmp_path, {"bee-1": [report()], "bee-2": [report()]})
    opts = StartOptions(problem="Why does the export drop rows?", repo=make_repo(tmp_path), model=f"script:{script}",
                        bees=2, angles=("a", "b"), runs_dir=tmp_path / "runs", grace=5.0, gate_modes=modes, race=race)
    tier = LoadingTier()
    result = asyncio.run(Coordinator(opts, tiers=[tier]).run())
    assert result.info.status == "finished"
    assert tier.loaded.is_set() is loads
