"""Small printing helpers shared by the commands."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson
import typer

from hive.errors import UsageError


def _runs_dir(value: str) -> Path:
    # An empty value would silently become '.', and scatter run directories wherever hive was started.
    if not value.strip():
        raise UsageError("--runs-dir is empty: name a directory, or leave the option out for ./runs")
    return Path(value)


RunsDirOption = typer.Option(
    None, "--runs-dir", envvar="HIVE_RUNS_DIR", parser=_runs_dir, help="Where runs live (default ./runs).",
    show_default=False,
)
JsonOption = typer.Option(False, "--json", help="Print machine-readable JSON.")


def print_json(value: Any) -> None:
    sys.stdout.buffer.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
    sys.stdout.flush()


def clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def human_duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
