"""Helpers for end-to-end tests: a small repository, scripted bees and judge, and a real `hive start`."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hive.judge.tiers.script import ScriptTier
from hive.records import BOARD_ADAPTER, GateDecision, Note, RunInfo, TranscriptEntry
from hive.store import read_all

KINDS = {"FOUND:": "finding", "DEAD END:": "dead_end", "DECIDED:": "decision", "BLOCKED:": "blocker"}


class LoadingTier(ScriptTier):
    """A script tier with a model to load, as the local tier has, that says whether anyone loaded it."""

    def __init__(self) -> None:
        super().__init__([], id="loading")
        self.loaded = threading.Event()

    def load(self) -> None:
        self.loaded.set()


def make_repo(root: Path) -> Path:
    repo = root / "repo"
    (repo / "app").mkdir(parents=True)
    (repo / "app" / "export.py").write_text(
        "BATCH = 250\n\n\ndef batches(rows, size=BATCH):\n"
        "    for start in range(0, len(rows) - size + 1, size):\n        yield rows[start:start + size]\n"
    )
    (repo / "app" / "config.py").write_text("TIMEZONE = 'UTC'\nCUTOFF_HOUR = 0\n")
    (repo / "README.md").write_text("A tiny export job.\n")
    return repo


def turn(say: str = "", tools: list[dict[str, Any]] | None = None, delay: float = 0.0) -> dict[str, Any]:
    t: dict[str, Any] = {}
    if say:
        t["say"] = say
    if tools:
        t["tools"] = tools
    if delay:
        t["delay"] = delay
    return t


def ls() -> list[dict[str, Any]]:
    return [{"name": "ls", "args": {"path": "."}}]


def report(text: str = "## Found\n- see notes\n\n## Ruled out\n- nothing\n\n## Open\n- nothing") -> dict[str, Any]:
    return {"say": text}


def write_script(root: Path, bees: dict[str, list[dict[str, Any]]], *, angles: list[str] | None = None,
                 answer: str = "The answer: the batching drops the last partial batch.") -> Path:
    path = root / "script.json"
    data: dict[str, Any] = {"bees": bees, "answer": answer}
    if angles is not None:
        data["angles"] = angles
    path.write_text(json.dumps(data))
    return path


def publish_rules() -> list[dict[str, Any]]:
    """Publish whatever a bee marked, with its kind; everything else is routine."""
    rules = []
    for prefix, kind in KINDS.items():
        probs = {k: 0.02 for k in ("finding", "dead_end", "decision", "blocker", "other")}
        probs[kind] = 0.92
        rules.append({"gate": "publish", "when": {"note": f"^{prefix}"},
                      "answers": {"news": 0.95, "kind": probs}})
    rules.append({"gate": "publish", "when": {"note": "."},
                  "answers": {"news": 0.05, "kind": {"finding": 0.02, "dead_end": 0.02, "decision": 0.02,
                                                     "blocker": 0.02, "other": 0.92}}})
    return rules


def relation(kind: str, p: float) -> dict[str, float]:
    rest = (1 - p) / 3
    probs = {k: rest for k in ("supersedes", "contradicts", "supports", "none")}
    probs[kind] = p
    return probs


def write_judge(root: Path, rules: list[dict[str, Any]]) -> Path:
    path = root / "judge.json"
    path.write_text(json.dumps(rules))
    return path


def hive_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "hive", *args]


def run_hive(args: list[str], *, cwd: Path, timeout: float = 90.0,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **(env or {})}
    return subprocess.run(hive_command(*args), cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env=full_env, stdin=subprocess.DEVNULL)


def only_run(runs: Path) -> Path:
    dirs = [p for p in runs.iterdir() if (p / "run.json").is_file()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def load_info(run_dir: Path) -> RunInfo:
    return RunInfo.model_validate_json((run_dir / "run.json").read_bytes())


def board(run_dir: Path) -> list[Any]:
    records, warnings = read_all(run_dir / "board.jsonl", BOARD_ADAPTER)
    assert not warnings, warnings
    return records


def gates(run_dir: Path) -> list[GateDecision]:
    records, warnings = read_all(run_dir / "gate.jsonl", GateDecision)
    assert not warnings, warnings
    return records


def notes(run_dir: Path) -> list[Note]:
    return [r for r in board(run_dir) if isinstance(r, Note)]


def transcript_text(run_dir: Path, bee: str) -> str:
    return (run_dir / "bees" / bee / "transcript.jsonl").read_text()


def transcript_entries(run_dir: Path, bee: str) -> list[TranscriptEntry]:
    records, warnings = read_all(run_dir / "bees" / bee / "transcript.jsonl", TranscriptEntry)
    assert not warnings, warnings
    return records


@contextlib.contextmanager
def tmpfs(mount: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` (``64k``) mounted on the new directory ``mount``, a small disk to fill; skips the
    test where mounting needs a root this process lacks."""
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode}); needs root")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)
