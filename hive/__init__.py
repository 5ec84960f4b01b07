"""hive: read-only investigator bees that share a judge-gated, append-only board.

The public Python API is re-exported here; everything else is implementation. Names are imported on
first use, so that `hive --help` and a bee's start-up pay only for what they touch.
"""

import importlib as _importlib
import typing as _typing

__version__ = "0.1.0"

if _typing.TYPE_CHECKING:
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


_EXPORTS = {
    "Answer": "hive.records",
    "BeeBrief": "hive.records",
    "BoardState": "hive.board",
    "Delivery": "hive.records",
    "Dispute": "hive.records",
    "GateDecision": "hive.records",
    "HiveError": "hive.errors",
    "Interrupted": "hive.errors",
    "JsonlReader": "hive.store",
    "JsonlWriter": "hive.store",
    "ModelAPIError": "hive.errors",
    "Note": "hive.records",
    "Relation": "hive.records",
    "Resolution": "hive.records",
    "RunFailed": "hive.errors",
    "RunInfo": "hive.records",
    "RunNotFound": "hive.errors",
    "RunPaths": "hive.runs",
    "SpecError": "hive.errors",
    "StoreError": "hive.errors",
    "TranscriptEntry": "hive.records",
    "UsageError": "hive.errors",
    "Verifier": "hive.records",
    "fold": "hive.board",
    "resolve_run": "hive.runs",
}


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


def __getattr__(name: str) -> _typing.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'hive' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
