"""hive: read-only investigator bees that share a judge-gated, append-only board.

The public Python API is re-exported here; everything else is implementation.
"""

__version__ = "0.1.0"

from hive.board import BoardState, fold
from hive.errors import (
    HiveError,
    Interrupted,
    ModelAPIError,
    RunFailed,
    RunNotFound,
    SpecError,
    StoreError,
    UsageError,
)
from hive.records import (
    Answer,
    BeeBrief,
    Delivery,
    Dispute,
    GateDecision,
    Note,
    Relation,
    Resolution,
    RunInfo,
    TranscriptEntry,
    Verifier,
)
from hive.runs import RunPaths, resolve_run
from hive.store import JsonlReader, JsonlWriter

__all__ = [
    "Answer",
    "BeeBrief",
    "BoardState",
    "Delivery",
    "Dispute",
    "GateDecision",
    "HiveError",
    "Interrupted",
    "JsonlReader",
    "JsonlWriter",
    "ModelAPIError",
    "Note",
    "Relation",
    "Resolution",
    "RunFailed",
    "RunInfo",
    "RunNotFound",
    "RunPaths",
    "SpecError",
    "StoreError",
    "TranscriptEntry",
    "UsageError",
    "Verifier",
    "__version__",
    "fold",
    "resolve_run",
]
