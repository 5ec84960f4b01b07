"""The benchmark scripts under scripts/ that docs/benchmarks.md names: their `--help` says what each measures."""

from __future__ import annotations

import argparse
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


@pytest.mark.parametrize(
    "args",
    [
        ["bench_pipeline.py", "--runs", "1", "--utterances", "1", "--sizes", "1"],
        ["bench_sharing.py", "--runs", "1", "--per-bee", "1", "--delay", "0"],
    ],
)
def test_a_plot_that_cannot_be_written_is_refused_before_the_measurement(args: list[str], tmp_path: Path) -> None:
    """docs/benchmarks.md's commands end with `--plot docs/….png`: a directory that is not there was a traceback
    after minutes of measuring (and a missing matplotlib a hint on stdout with exit status 0)."""
    target = tmp_path / "missing" / "plot.png"
    done = subprocess.run([sys.executable, str(SCRIPTS / args[0]), *args[1:], "--plot", str(target)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "is not a directory" in done.stderr and "Traceback" not in done.stderr


def test_a_plot_without_matplotlib_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    from benchlib import plot_path

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an environment without the bench extra has
    with pytest.raises(argparse.ArgumentTypeError, match=r"needs matplotlib: .*\[bench\]"):
        plot_path("plot.png")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["bench_judge.py", "--texts", "{missing}"], "is not a file"),
        (["bench_judge_overhead.py", "--runs", "1", "--root", "{missing}"], "is not a directory"),
        (["bench_judge_overhead.py", "--runs", "1", "--root", "{empty}"], "holds no hive/judge/local"),
        (["bench_judge_overhead.py", "--runs", "1", "--texts", "{missing}"], "is not a file"),
        (["bench_tools.py", "--runs", "1", "--repo", "{missing}"], "is not a directory"),
        (["eval_local.py", "--evals", "{missing}"], "is not a directory"),
    ],
)
def test_a_path_option_naming_nothing_usable_is_a_usage_error(args: list[str], message: str, tmp_path: Path) -> None:
    """A --root that was not a checkout measured this checkout and printed the other's name; a --texts that was
    not there fell back to other texts silently; a --repo or --texts that was not there was a traceback."""
    paths = {"missing": str(tmp_path / "missing"), "empty": str(tmp_path)}
    done = subprocess.run([sys.executable, str(SCRIPTS / args[0]), *(a.format(**paths) for a in args[1:])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
