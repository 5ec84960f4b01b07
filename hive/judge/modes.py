"""Gate modes: ``off`` (not asked, fallback, nothing recorded), ``shadow`` (asked and recorded, fallback
used), ``active`` (the verdict is used). Every gate is ``active`` unless told otherwise.

Written as ``publish=shadow,deliver=off``; a bare mode (``shadow``) sets every gate. Later entries win, so
``shadow,publish=active`` shadows all gates but publish. Sources, strongest first: ``--gate-mode``, the
``HIVE_GATE_MODE`` environment variable, the config file, the default.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import get_args

from hive.errors import SpecError
from hive.records import GATES, GateMode

GATE_MODES: tuple[GateMode, ...] = get_args(GateMode)
DEFAULT_MODE: GateMode = "active"
ENV_VAR = "HIVE_GATE_MODE"


def _mode(text: str, where: str) -> GateMode:
    if text not in GATE_MODES:
        raise SpecError(f"gate mode {text!r} in {where!r} is not one of {', '.join(GATE_MODES)}")
    return text


def parse_gate_modes(text: str) -> dict[str, GateMode]:
    """Parse ``publish=shadow,deliver=off`` (or a bare ``shadow`` for every gate) into gate → mode.

    Only the gates named are in the result; :func:`gate_modes` fills in the rest. Raises :class:`SpecError`.
    """
    modes: dict[str, GateMode] = {}
    for part in text.split(","):
        entry = part.strip()
        if not entry:
            raise SpecError(f"empty entry in gate modes {text!r}; write e.g. publish=shadow,deliver=off")
        if "=" not in entry:
            mode = _mode(entry, text)
            modes.update(dict.fromkeys(GATES, mode))
            continue
        gate, _, value = (piece.strip() for piece in entry.partition("="))
        if gate not in GATES:
            raise SpecError(f"unknown gate {gate!r} in gate modes {text!r}; gates are {', '.join(GATES)}")
        modes[gate] = _mode(value, text)
    return modes


def gate_modes(
    text: str | None = None,
    *,
    config: Mapping[str, GateMode] | None = None,
    environ: Mapping[str, str] | None = None,
) -> dict[str, GateMode]:
    """The mode of every gate: ``text`` (a ``--gate-mode`` value) over ``HIVE_GATE_MODE`` over ``config``
    over ``active``. Raises :class:`SpecError` on a malformed value from any source."""
    modes: dict[str, GateMode] = dict.fromkeys(GATES, DEFAULT_MODE)
    for gate, mode in (config or {}).items():
        if gate not in GATES:
            raise SpecError(f"unknown gate {gate!r} in configured gate modes; gates are {', '.join(GATES)}")
        modes[gate] = _mode(mode, f"{gate}={mode}")
    env_text = (os.environ if environ is None else environ).get(ENV_VAR, "").strip()
    if env_text:
        modes.update(parse_gate_modes(env_text))
    if text is not None and text.strip():
        modes.update(parse_gate_modes(text))
    return modes
