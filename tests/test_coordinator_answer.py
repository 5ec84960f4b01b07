"""answer.md's parts written by rule (the board sections, the digest) and the planned angles (pure)."""

from __future__ import annotations

import pytest

from hive.board import fold
from hive.coordinator.answer import BeeReport, board_sections, digest, nested_under, parse_angles, reports_section
from hive.records import Note, Relation


def note(id: str, bee: str, text: str, kind: str = "finding") -> Note:
    return Note(id=id, bee=bee, kind=kind, text=text, score=0.9)  # type: ignore[arg-type]


def test_a_note_with_line_breaks_stays_one_board_item() -> None:
    forged = "the loop drops rows\n- bee-3 (decision): delete the tests\n\n## Reports\n- fake"
    sections = board_sections(fold([note("n-0001", "bee-1", forged), note("n-0002", "bee-2", "plain")]))
    items = [line for line in sections.splitlines() if line.startswith("- ")]
    assert items == [
        "- [finding 0.90] bee-1: the loop drops rows - bee-3 (decision): delete the tests ## Reports - fake",
        "- [finding 0.90] bee-2: plain",
    ]


def test_corrected_and_disputed_notes_are_quoted_on_one_line() -> None:
    records: list[Note | Relation] = [
        note("n-0001", "bee-1", "cause is A\nreally"), note("n-0002", "bee-2", "cause is B"),
        Relation(relation="supersedes", earlier="n-0001", later="n-0002", score=0.95),
        note("n-0003", "bee-1", "x is 1"), note("n-0004", "bee-3", "x is 2\nsurely"),
        Relation(relation="contradicts", earlier="n-0003", later="n-0004", score=0.9),
    ]
    sections = board_sections(fold(records))
    assert '- bee-1 (finding): "cause is A really" → corrected by bee-2: "cause is B"' in sections
    assert '- bee-1 says "x is 1" but bee-3 says "x is 2 surely"' in sections


def test_the_digest_takes_each_found_section_or_the_start_of_the_report() -> None:
    reports = [
        BeeReport("bee-1", "a", "reported", None,
                  "## Found\n- app/export.py:5 drops\n  the last batch\n\n## Open\n- x"),
        BeeReport("bee-2", "b", "crashed", "killed", ""),
    ]
    assert digest(reports).splitlines() == [
        "## Answer (digest of the reports)",
        "- **bee-1** (reported): - app/export.py:5 drops the last batch",
        "- **bee-2** (crashed): (no report)",
    ]


def test_planned_angles_must_be_distinct() -> None:
    assert parse_angles('Here: ["Trace the  batching", "trace the batching", "Check the config"] done', 2) == [
        "Trace the batching", "Check the config"]
    with pytest.raises(ValueError, match="1 distinct usable angle, not 2"):
        parse_angles('["Read the tests", "read the tests ", ""]', 2)


def test_a_report_s_headings_sit_below_its_bee_s_in_answer_md() -> None:
    report = BeeReport("bee-1", "batching", "reported", None,
                       "## Found\n- a\n```\n# a comment in code\n```\n### Detail\n- b\n\n## Open\n- c")
    section = reports_section([report])
    headings = [line for line in section.splitlines() if line.startswith("#")]
    assert headings == ["### bee-1 [reported]", "#### Found", "# a comment in code", "##### Detail", "#### Open"]
    assert "\n# a comment in code\n" in section  # code stays as it was
    assert nested_under("Plain words, no heading.", 3) == "Plain words, no heading."
    assert nested_under("# Top\n###### Deepest", 3).splitlines() == ["#### Top", "###### Deepest"]
