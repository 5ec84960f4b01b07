"""The three gates over a real judge (script and http tiers): rules, policies, fallbacks, modes, rows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judge_http_server import closed_port

from hive.gates import (
    Gates,
    find_duplicate,
    marked_kind,
    render_note,
    select_related,
    word_set,
)
from hive.judge.engine import Judge
from hive.judge.tiers.http import HttpTier
from hive.judge.tiers.script import ScriptTier
from hive.records import GateDecision, GateMode, Note, NoteKind, Utterance

GOAL = "why does the nightly export drop rows"


def note(id: str, text: str, *, bee: str = "bee-1", kind: NoteKind = "finding") -> Note:
    return Note(id=id, bee=bee, kind=kind, text=text, score=0.9)


def said(text: str, bee: str = "bee-2", seq: int = 1) -> Utterance:
    return Utterance(bee=bee, seq=seq, text=text)


def script_gates(tmp_path: Path, rules: list[dict[str, Any]], modes: dict[str, GateMode] | None = None) -> Gates:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps(rules))
    return Gates(Judge([ScriptTier.from_file(path)]), goal=GOAL, modes=modes)


def down_gates(modes: dict[str, GateMode] | None = None) -> Gates:
    """Gates whose only tier is an http endpoint on a port nobody listens on."""
    return Gates(Judge([HttpTier(f"http://127.0.0.1:{closed_port()}/evaluate")]), goal=GOAL, modes=modes)


PUBLISH_RULES = [
    {"gate": "publish", "when": {"note": "batch size"}, "answers": {"news": 0.92, "kind": {"finding": 0.85}}},
    {
        "gate": "publish",
        "when": {"note": "(?i)let me open"},
        "answers": {"news": 0.05, "kind": {"other": 0.9}},
    },
    {"gate": "publish", "when": {"note": "maybe"}, "answers": {"news": 0.5, "kind": {"finding": 0.5}}},
    {
        "gate": "publish",
        "when": {"note": "routine but news"},
        "answers": {"news": 0.95, "kind": {"other": 0.8}},
    },
]


# --------------------------------------------------------------------------- pure helpers


def test_word_sets_and_markers() -> None:
    assert word_set("The export.py drops ROWS at id-42 in a go") == {
        "the",
        "export.py",
        "drops",
        "rows",
        "id-42",
    }
    assert marked_kind("FOUND: the writer flushes late") == "finding"
    assert marked_kind("some context\n  dead end: retrying did not help") == "dead_end"
    assert marked_kind("**DECIDED:** patch the flush") == "decision"
    assert marked_kind("Blocked: no network") == "blocker"
    assert marked_kind("I have FOUND: nothing at line start") is None


def test_duplicates_need_eighty_percent_of_the_words_in_one_note() -> None:
    board = [note("n-1", "the exporter drops rows when the batch size exceeds 500 entries")]
    assert find_duplicate("exporter drops rows when batch size exceeds 500", board) == (True, board[0])
    assert find_duplicate("exporter drops rows when the cursor is reused after commit", board) == (
        False,
        None,
    )
    assert find_duplicate("!! ok ?", board) == (True, None)


def test_select_related_keeps_overlapping_earlier_notes_closest_first() -> None:
    new = note("n-9", "the exporter batch size of 500 drops the last rows", bee="bee-2")
    standing = [
        note("n-1", "the exporter batch size is read from settings.yaml"),
        note("n-2", "postgres logs show no errors tonight"),
        note("n-3", "batch size 500 drops the last rows of the exporter output"),
        new,
    ]
    assert [n.id for n in select_related(new, standing)] == ["n-3", "n-1"]
    assert [n.id for n in select_related(new, standing, limit=1)] == ["n-3"]
    assert select_related(new, standing, limit=0) == []
    prefer_first = select_related(new, standing, similarity=lambda a, b: 1.0 if "settings" in b else 0.0)
    assert [n.id for n in prefer_first] == ["n-1", "n-3"]


# --------------------------------------------------------------------------- publish


async def test_publish_on_confident_news_and_a_kind(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, PUBLISH_RULES)
    result = await gates.publish(said("the batch size is capped at 500 in export.py:88"), focus="exporter", board=[])
    assert (result.publish, result.kind, result.score) == (True, "finding", 0.92)
    row = result.decision
    assert row is not None
    assert (row.id, row.gate, row.outcome, row.source, row.reason, row.mode, row.verdict) == (
        "g-000001",
        "publish",
        "publish",
        "judge",
        None,
        "active",
        "publish",
    )
    assert (row.bee, row.utterance, row.kind, row.version) == ("bee-2", "bee-2#1", "finding", 1)
    assert row.text == "the batch size is capped at 500 in export.py:88"
    assert set(row.answers) == {"news", "kind"} and row.answers["kind"].tier.startswith("script:")
    assert row.tiers[0].asked == ["news", "kind"] and row.state_digest


async def test_publish_withholds_routine_progress(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, PUBLISH_RULES)
    result = await gates.publish(said("Let me open the exporter module next."), focus="exporter", board=[])
    assert (result.publish, result.kind) == (False, None)
    assert result.decision is not None and result.decision.outcome == "withhold"
    assert result.decision.source == "judge"
    news_but_other = await gates.publish(said("routine but news, says the script"), focus="x", board=[])
    assert not news_but_other.publish and news_but_other.decision.verdict == "withhold"  # type: ignore[union-attr]


async def test_publish_unsure_falls_back_to_the_bees_marker(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, PUBLISH_RULES)
    marked = await gates.publish(said("FOUND: maybe the cursor is reused"), focus="x", board=[])
    assert (marked.publish, marked.kind, marked.score) == (True, "finding", 0.5)
    assert marked.decision is not None
    assert (marked.decision.source, marked.decision.reason, marked.decision.verdict) == (
        "fallback",
        "unsure",
        "unsure",
    )
    unmarked = await gates.publish(said("maybe the cursor is reused somewhere"), focus="x", board=[])
    assert (unmarked.publish, unmarked.kind) == (False, None)
    assert unmarked.decision is not None and unmarked.decision.outcome == "withhold"
    assert unmarked.decision.text == "maybe the cursor is reused somewhere"


async def test_publish_with_the_judge_down_publishes_only_marked_text() -> None:
    gates = down_gates()
    blocked = await gates.publish(said("BLOCKED: pip cannot reach the package index"), focus="x", board=[])
    assert (blocked.publish, blocked.kind, blocked.score) == (True, "blocker", 0.5)
    assert blocked.decision is not None
    assert (blocked.decision.source, blocked.decision.reason) == ("fallback", "error:unreachable")
    plain = await gates.publish(said("the batch size is capped at 500 in export.py"), focus="x", board=[])
    assert not plain.publish and plain.decision is not None and plain.decision.reason == "error:unreachable"
    await gates.judge.aclose()


async def test_duplicates_are_dropped_by_rule_before_the_judge(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, PUBLISH_RULES)
    board = [note("n-4", "the batch size is capped at 500 in export.py:88 which drops rows")]
    result = await gates.publish(said("FOUND: batch size is capped at 500 in export.py:88"), focus="x", board=board)
    assert (result.publish, result.kind) == (False, None)
    row = result.decision
    assert row is not None
    assert (row.outcome, row.source, row.reason, row.note) == ("duplicate", "rule", "duplicate of n-4", "n-4")
    assert row.tiers == [] and row.text == "FOUND: batch size is capped at 500 in export.py:88"
    empty = await gates.publish(said("?? !! .."), focus="x", board=[])
    assert empty.decision is not None and empty.decision.reason == "no words"


async def test_shadow_asks_and_records_but_uses_the_fallback(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, PUBLISH_RULES, modes={"publish": "shadow"})
    result = await gates.publish(said("the batch size is capped at 500 in export.py:88"), focus="x", board=[])
    assert not result.publish
    row = result.decision
    assert row is not None
    assert (row.source, row.mode, row.verdict, row.outcome, row.reason) == (
        "shadow",
        "shadow",
        "publish",
        "withhold",
        "shadow",
    )
    assert row.answers["news"].p == 0.92


async def test_off_asks_nothing_and_records_no_judgement(tmp_path: Path) -> None:
    gates = down_gates(modes={"publish": "off", "deliver": "off", "relate": "off"})
    marked = await gates.publish(said("DEAD END: retrying the export changed nothing"), focus="x", board=[])
    assert (marked.publish, marked.kind) == (True, "dead_end")
    # An utterance still gets its one publish row, so a withheld text is never lost; it holds no judgement.
    plain = await gates.publish(said("Let me look at the writer next, then the database."), focus="x", board=[])
    assert plain.publish is False and plain.decision is not None
    row = plain.decision
    assert (row.outcome, row.source, row.reason, row.mode, row.verdict) == ("withhold", "fallback", "off", "off", None)
    assert (row.answers, row.tiers, row.text) == ({}, [], "Let me look at the writer next, then the database.")
    assert marked.decision is not None and marked.decision.outcome == "publish"
    delivered = await gates.deliver(note("n-1", "rows vanish", kind="finding"), to_bee="bee-3", focus="x")
    assert (delivered.decision, delivered.deliver) == (None, False)
    related = await gates.relate(note("n-1", "a b c"), note("n-2", "a b c d", bee="bee-2"))
    assert (related.decision, related.relation) == (None, None)


# --------------------------------------------------------------------------- deliver

DELIVER_RULES = [
    {"gate": "deliver", "when": {"focus": "exporter", "note": "batch"}, "answers": {"useful": 0.9}},
    {"gate": "deliver", "when": {"focus": "database"}, "answers": {"useful": 0.1}},
    {"gate": "deliver", "answers": {"useful": 0.6}},
]


async def test_deliver_on_a_confident_yes_only(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, DELIVER_RULES)
    finding = note("n-1", "batch size 500 drops rows", bee="bee-1")
    yes = await gates.deliver(finding, to_bee="bee-2", focus="the exporter code path")
    assert (yes.deliver, yes.score, yes.by_rule) == (True, 0.9, False)
    assert yes.decision is not None
    assert (
        yes.decision.outcome,
        yes.decision.note,
        yes.decision.to,
        yes.decision.bee,
        yes.decision.kind,
    ) == ("deliver", "n-1", "bee-2", "bee-1", "finding")
    no = await gates.deliver(finding, to_bee="bee-3", focus="database locks")
    assert not no.deliver and no.decision is not None and no.decision.outcome == "skip"
    unsure = await gates.deliver(finding, to_bee="bee-4", focus="scheduling")
    assert not unsure.deliver and unsure.decision is not None
    assert (unsure.decision.source, unsure.decision.reason) == ("fallback", "unsure")


@pytest.mark.parametrize("kind", ["decision", "blocker"])
async def test_decisions_and_blockers_reach_every_bee_with_the_judge_down(kind: NoteKind) -> None:
    gates = down_gates()
    result = await gates.deliver(note("n-7", "we patch the flush in export.py", kind=kind), to_bee="bee-2", focus="db")
    assert (result.deliver, result.by_rule, result.score) == (True, True, 1.0)
    row = result.decision
    assert row is not None and (row.source, row.outcome, row.tiers) == ("rule", "deliver", [])
    plain = await gates.deliver(note("n-8", "rows vanish after commit"), to_bee="bee-2", focus="db")
    assert not plain.deliver and plain.decision is not None and plain.decision.reason == "error:unreachable"
    await gates.judge.aclose()


def test_rule_rows_have_fresh_ids() -> None:
    ids = iter(["x-1", "x-2"])
    gates = Gates(Judge([]), goal=GOAL, new_id=lambda: next(ids))
    first = gates.rule("deliver", "capped", note="n-1", to="bee-2", reason="cap of 10 reached")
    second = gates.rule("withheld", "withheld", note="n-1", to="bee-3")
    assert isinstance(first, GateDecision)
    assert (first.id, first.source, first.outcome, second.id, second.gate) == (
        "x-1",
        "rule",
        "capped",
        "x-2",
        "withheld",
    )


# --------------------------------------------------------------------------- relate


def relate_rules(p: float, relation: str = "supersedes") -> list[dict[str, Any]]:
    return [{"gate": "relate", "answers": {"relation": {relation: p}}}]


@pytest.mark.parametrize(
    ("p", "same_bee", "relation", "source"),
    [
        (0.85, False, None, "fallback"),
        (0.95, False, "supersedes", "judge"),
        (0.65, True, "supersedes", "judge"),
        (0.55, True, None, "fallback"),
    ],
)
async def test_supersedes_bars(tmp_path: Path, p: float, same_bee: bool, relation: str | None, source: str) -> None:
    gates = script_gates(tmp_path, relate_rules(p))
    earlier = note("n-1", "the exporter drops rows because of the batch size")
    later = note("n-2", "the batch size is fine; the cursor is reused", bee="bee-1" if same_bee else "bee-2")
    result = await gates.relate(earlier, later)
    assert result.relation == relation
    assert result.decision is not None and result.decision.source == source
    assert (result.decision.earlier, result.decision.later, result.decision.bee) == ("n-1", "n-2", later.bee)


async def test_same_bee_contradiction_counts_as_supersedes(tmp_path: Path) -> None:
    gates = script_gates(tmp_path, relate_rules(0.7, "contradicts"))
    earlier, later = note("n-1", "the cache is stale"), note("n-2", "the cache is not stale", bee="bee-1")
    result = await gates.relate(earlier, later)
    assert (result.relation, result.score) == ("supersedes", pytest.approx(0.7))
    assert result.decision is not None and result.decision.outcome == "supersedes"
    cross = await gates.relate(earlier, note("n-3", "the cache is not stale", bee="bee-2"))
    assert cross.relation == "contradicts"


async def test_relate_state_renders_notes_and_none_is_no_relation(tmp_path: Path) -> None:
    rules = [
        {
            "gate": "relate",
            "when": {"earlier": r"^bee-1 \(blocker\): pip", "same_bee": "false"},
            "answers": {"relation": {"none": 0.8}},
        }
    ]
    gates = script_gates(tmp_path, rules)
    result = await gates.relate(note("n-1", "pip is offline", kind="blocker"), note("n-2", "rows vanish", bee="bee-3"))
    assert result.relation is None
    assert result.decision is not None and (result.decision.source, result.decision.outcome) == (
        "judge",
        "none",
    )
    assert render_note(note("n-1", "x", kind="dead_end")) == "bee-1 (dead_end): x"


async def test_relate_with_the_judge_down_removes_nothing() -> None:
    gates = down_gates()
    result = await gates.relate(note("n-1", "a claim"), note("n-2", "another claim", bee="bee-2"))
    assert result.relation is None
    assert result.decision is not None and result.decision.reason == "error:unreachable"
    await gates.judge.aclose()


async def test_a_cross_bee_supersedes_below_the_bar_escalates_to_the_next_tier(tmp_path: Path) -> None:
    cheap_rules, strong_rules = tmp_path / "cheap.json", tmp_path / "strong.json"
    cheap_rules.write_text(json.dumps(relate_rules(0.85)))
    strong_rules.write_text(json.dumps(relate_rules(0.8, "supports")))
    cheap, strong = ScriptTier.from_file(cheap_rules), ScriptTier.from_file(strong_rules)
    gates = Gates(Judge([cheap, strong]), goal=GOAL)
    earlier, later = note("n-1", "rows vanish in flush"), note("n-2", "flush drops the tail", bee="bee-2")
    result = await gates.relate(earlier, later)
    assert result.relation == "supports"
    assert result.decision is not None and result.decision.answers["relation"].tier == strong.id
    assert [(call.tier, call.kept) for call in result.decision.tiers] == [(cheap.id, []), (strong.id, ["relation"])]
    same_bee = await gates.relate(earlier, note("n-3", "flush drops the tail", bee="bee-1"))
    assert same_bee.relation == "supersedes" and len(same_bee.decision.tiers) == 1  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("p", "answered", "outcome", "source"),
    [(0.95, True, "answered", "judge"), (0.85, False, "continue", "fallback"), (0.1, False, "continue", "judge")],
)
async def test_answer_stops_the_hive_only_when_near_certain(
    tmp_path: Path, p: float, answered: bool, outcome: str, source: str
) -> None:
    gates = script_gates(tmp_path, [{"gate": "answer", "when": {"note": "partial batch"}, "answers": {"answers": p}}])
    result = await gates.answer(note("n-0003", "export.py:5 never yields the final partial batch"))
    assert result.answered is answered and result.score == p
    row = result.decision
    assert row is not None
    assert (row.gate, row.outcome, row.source, row.note, row.kind, row.version) == (
        "answer", outcome, source, "n-0003", "finding", 1)
    assert row.answers["answers"].p == p


async def test_answer_with_the_judge_down_goes_on() -> None:
    result = await down_gates().answer(note("n-0003", "export.py:5 never yields the final partial batch"))
    assert not result.answered
    assert result.decision is not None and result.decision.reason == "error:unreachable"


async def test_answer_state_names_the_goal_and_the_note(tmp_path: Path) -> None:
    when = {"goal": "drop rows", "kind": "decision", "bee": "bee-4"}
    gates = script_gates(tmp_path, [{"gate": "answer", "when": when, "answers": {"answers": 0.97}}])
    assert (await gates.answer(note("n-9", "DECIDED: fix the range", bee="bee-4", kind="decision"))).answered
    assert not (await gates.answer(note("n-9", "DECIDED: fix the range", bee="bee-4"))).answered


def test_a_rule_row_of_a_gate_carries_its_version_and_mode() -> None:
    """A capped delivery is a deliver row: like every row of the gate it says which version and mode decided."""
    gates = Gates(Judge([]), goal=GOAL, modes={"deliver": "shadow"})
    capped = gates.rule("deliver", "capped", note="n-1", to="bee-2", reason="bee-2 already received 10 notes")
    assert (capped.version, capped.mode) == (1, "shadow")
    verify = gates.rule("verify", "spawn", bee="verify-1", dispute="d-1")
    assert (verify.version, verify.mode) == (None, None)  # the coordinator's own rules belong to no gate


async def test_script_rules_for_relate_read_each_note_verbatim_or_with_its_bee_and_kind(tmp_path: Path) -> None:
    """The issue: a rule's regex is searched in a note's verbatim text, so `^` anchors at the note's first word;
    the rendered `<bee> (<kind>): <text>` still matches too, for rules on who said it."""
    gates = script_gates(tmp_path, [
        {"gate": "relate", "when": {"later": "^The rows are lost in flush", "earlier": "^bee-1 \\(finding\\): "},
         "answers": {"relation": {"supports": 0.9}}},
    ])
    earlier = note("n-1", "flush() never sees the last partial batch", bee="bee-1")
    later = note("n-2", "The rows are lost in flush(): the last batch is skipped", bee="bee-2")
    result = await gates.relate(earlier, later)
    assert result.relation == "supports" and result.decision is not None and result.decision.source == "judge"
    assert (await gates.relate(earlier, note("n-3", "So the rows are lost in flush()", bee="bee-2"))).relation is None
