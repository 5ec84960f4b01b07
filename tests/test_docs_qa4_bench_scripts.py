"""The benchmark scripts under scripts/ that docs/benchmarks.md names: their `--help` says what each measures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
BENCHES = sorted(path.name for path in SCRIPTS.glob("bench_*.py"))


@pytest.mark.parametrize("script", BENCHES)
def test_help_describes_the_benchmark_in_whole_sentences(script: str) -> None:
    """The description was the docstring's first line, cut mid-sentence ("... the coordinator's memory with the")."""
    done = subprocess.run([sys.executable, str(SCRIPTS / script), "--help"], capture_output=True, text=True,
                          timeout=60, check=True)
    description = done.stdout.split("\n\n")[1]
    assert description.rstrip().endswith("."), description
