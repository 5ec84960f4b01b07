"""scripts/bench_sharing.py counts every note that entered a bee's context, last calls included."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

from bench_sharing import injected_chars_of

from hive.bee.prompts import CARRY_ON, LAST_CALL_INTRO, LAST_CALL_OUTRO, NOTES_HEADER


def test_notes_handed_over_in_a_last_call_count_as_injected() -> None:
    """Notes that arrive while a bee writes its report reach it in a last call, which opens with its own intro:
    the script counted only messages opening with the notes header, so those tokens were left out."""
    notes = f"{NOTES_HEADER}\n- bee-2 (finding): export/nightly.py:17 drops the final partial batch"
    last_call = f"{LAST_CALL_INTRO}\n{notes}\n\n{LAST_CALL_OUTRO}"
    assert injected_chars_of({"role": "user", "content": notes}) == len(notes)
    assert injected_chars_of({"role": "user", "content": last_call}) == len(last_call)
    assert injected_chars_of({"role": "user", "content": CARRY_ON}) == 0
    assert injected_chars_of({"role": "assistant", "content": notes}) == 0
