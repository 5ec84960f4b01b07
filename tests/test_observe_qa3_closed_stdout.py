"""``hive start … | head``: a reader that goes away must not cost the run. The run goes on to its end, its
files say so, and the command exits as the run did, without a traceback."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.hive_runs import (
    hive_command,
    load_info,
    ls,
    make_repo,
    only_run,
    publish_rules,
    report,
    turn,
    write_judge,
    write_script,
)

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("view", ["--plain", "--json"])
def test_a_run_whose_stdout_nobody_reads_goes_on_to_its_end(tmp_path: Path, view: str) -> None:
    repo, runs = make_repo(tmp_path), tmp_path / "runs"
    script = write_script(tmp_path, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch.", ls()), report()],
        "bee-2": [turn("FOUND: app/config.py:2 sets CUTOFF_HOUR = 0.", ls()), report()],
    })
    judge = write_judge(tmp_path, publish_rules())
    read_end, write_end = os.pipe()
    os.close(read_end)  # `| true`: the first line written to stdout meets a closed pipe
    try:
        done = subprocess.run(
            hive_command("start", "Why does the export drop rows?", "--repo", str(repo), "--runs-dir", str(runs),
                         "--model", f"script:{script}", "--judge", f"script:{judge}", "--angle", "batching",
                         "--angle", "config", view),
            cwd=tmp_path, stdout=write_end, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
            timeout=90,
        )
    finally:
        os.close(write_end)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "Broken pipe" not in done.stderr
    run_dir = only_run(runs)
    assert load_info(run_dir).status == "finished"
    assert "drops the last partial batch" in (run_dir / "answer.md").read_text()
