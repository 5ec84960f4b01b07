"""The board's vocabulary: the closed sets of words its records use. Kept free of heavy imports so that
the command line can name them without loading the record models."""

from __future__ import annotations

from typing import Literal

NoteKind = Literal["finding", "dead_end", "decision", "blocker"]
NOTE_KINDS: tuple[NoteKind, ...] = ("finding", "dead_end", "decision", "blocker")
RelationKind = Literal["supersedes", "contradicts", "supports"]
RunStatus = Literal["running", "finished", "interrupted", "failed"]
GateMode = Literal["off", "shadow", "active"]
DecisionSource = Literal["judge", "fallback", "rule", "shadow"]
BeeOutcome = Literal["reported", "cut_short", "failed", "crashed"]
GATES: tuple[str, ...] = ("publish", "deliver", "relate")
"""The gates between the bees, each with a mode (off, shadow, active)."""
ANSWER_GATE = "answer"
"""The early-stop gate: asked only with ``hive start --race``, so it has no mode of its own."""
JUDGED_GATES: tuple[str, ...] = (*GATES, ANSWER_GATE)
"""Every gate a judge may be asked for."""
