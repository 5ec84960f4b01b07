"""The two pages that describe a bee's transcript name every event a transcript line can carry.

docs/bee.md's transcript section left out `utterance` and `elided` (added after it was written), so a reader
of that page met lines it did not describe; this keeps both pages in step with the record.
"""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pytest

from hive.records import TranscriptEntry

DOCS = Path(__file__).resolve().parent.parent / "docs"


def transcript_events() -> set[str]:
    return set(typing.get_args(TranscriptEntry.model_fields["event"].annotation))


def section(page: str, heading: str) -> str:
    """The text of ``page`` under ``heading``, up to the next heading of the same or a higher level."""
    lines = (DOCS / page).read_text(encoding="utf-8").splitlines()
    starts = [i for i, line in enumerate(lines) if line.lstrip("#") == f" {heading}" and line.startswith("#")]
    assert starts, f"{page} has no section {heading!r}"
    level = len(lines[starts[0]]) - len(lines[starts[0]].lstrip("#"))
    body: list[str] = []
    for line in lines[starts[0] + 1:]:
        depth = len(line) - len(line.lstrip("#"))
        if 0 < depth <= level and line[depth:].startswith(" "):
            break
        body.append(line)
    return "\n".join(body)


@pytest.mark.parametrize(("page", "heading"), [("bee.md", "The transcript"),
                                               ("formats.md", "bees/&lt;bee&gt;/transcript.jsonl")])
def test_every_transcript_event_is_named_on_the_page(page: str, heading: str) -> None:
    named = set(re.findall(r"`(\w+)`", section(page, heading)))
    assert transcript_events() - named == set()
