"""Every record survives the trip through a JSON line unchanged, and ``hive schema`` describes it."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from pydantic import BaseModel, TypeAdapter, ValidationError

from hive.cli import main
from hive.records import (
    BEE_MESSAGE_ADAPTER,
    BOARD_ADAPTER,
    COORDINATOR_MESSAGE_ADAPTER,
    GATE_ADAPTER,
    SCHEMAS,
    Activity,
    Answer,
    BeeBrief,
    BeeInfo,
    Delivery,
    Dispute,
    GateDecision,
    InboxItem,
    Note,
    Notes,
    Ready,
    Received,
    Relation,
    Report,
    Resolution,
    RunInfo,
    Stop,
    TierCall,
    TranscriptEntry,
    Usage,
    Utterance,
    Verifier,
    WrapUp,
    json_schema,
    now_iso,
    parse_iso,
)
from hive.store import dumps

AT = "2026-11-30T03:04:05.123Z"

NOTE = Note(
    id="n1",
    bee="bee-1",
    kind="finding",
    text="The cache key ignores the locale.",
    score=0.91,
    at=AT,
    utterance="bee-1#3",
    decision="d7",
)
RUN_INFO = RunInfo(
    id="20261130-030405-a1b2",
    problem="Why does the checkout page render in English for German users?",
    repo="/src/shop",
    repo_head="0123456789abcdef0123456789abcdef01234567",
    bees=[
        BeeInfo(id="bee-1", angle="caching", model="m"),
        BeeInfo(id="bee-2", angle="i18n", outcome="reported"),
    ],
    model="openai:gpt-x",
    judge=["local:minilm", "http:small"],
    gate_modes={"publish": "active", "deliver": "shadow", "relate": "off"},
    versions={"hive": "0.1.0", "protocol": "1"},
    started_at=AT,
    ended_at="2026-11-30T03:10:00.000Z",
    status="finished",
    exit_reason="all bees reported",
    pid=4242,
    host="box",
    settings={"delivery_cap": 8, "nested": {"k": None}},
)
GATE_DECISION = GateDecision(
    id="d7",
    gate="publish",
    at=AT,
    outcome="publish",
    source="judge",
    reason=None,
    version=2,
    mode="active",
    verdict="finding",
    bee="bee-1",
    utterance="bee-1#3",
    kind="finding",
    score=0.91,
    text="The cache key ignores the locale.",
    answers={
        "news": Answer(question="news", type="boolean", p=0.93, zone="yes", tier="local:minilm"),
        "kind": Answer(
            question="kind",
            type="choice",
            probs={"finding": 0.8, "decision": 0.2},
            pick="finding",
            p=0.8,
            zone="picked",
            tier="http:small",
            verbalized=True,
        ),
        "useful": Answer(question="useful", type="score", level=2.5, tier="none"),
    },
    tiers=[
        TierCall(tier="local:minilm", asked=["news", "kind"], kept=["news"], latency_ms=3.5, tokens=40),
        TierCall(tier="http:small", asked=["kind"], kept=["kind"], latency_ms=120.0, error=None),
    ],
    latency_ms=124.25,
    tokens=95,
    state_digest="abc123",
)

EXAMPLES: list[tuple[BaseModel, TypeAdapter[Any] | type[BaseModel]]] = [
    (RUN_INFO, RunInfo),
    (RunInfo(id="r", problem="p", repo="."), RunInfo),
    (BeeInfo(id="verify-1", angle="settle d1", role="verifier", outcome="cut_short", reason="time"), BeeInfo),
    (NOTE, BOARD_ADAPTER),
    (
        Relation(later="n2", earlier="n1", relation="supersedes", score=0.7, at=AT, same_bee=True, decision="d9"),
        BOARD_ADAPTER,
    ),
    (Relation(later="n3", earlier="n1", relation="contradicts", score=0.66), BOARD_ADAPTER),
    (Relation(later="n4", earlier="n1", relation="supports", score=0.5), BOARD_ADAPTER),
    (Dispute(id="x1", notes=("n1", "n3"), at=AT), BOARD_ADAPTER),
    (Resolution(dispute="x1", superseded="n1", by="n5", at=AT), BOARD_ADAPTER),
    (Delivery(note="n5", to="bee-2", how="correction", replaces="n1", at=AT), BOARD_ADAPTER),
    (Delivery(note="n1", to="bee-3", how="judge"), BOARD_ADAPTER),
    (Verifier(bee="verify-1", dispute="x1", notes=("n1", "n3"), at=AT), BOARD_ADAPTER),
    (GATE_DECISION, GATE_ADAPTER),
    (
        GateDecision(id="d8", gate="deliver", outcome="capped", source="rule", reason="cap", note="n1", to="bee-2"),
        GATE_ADAPTER,
    ),
    (
        GateDecision(
            id="d9",
            gate="relate",
            outcome="none",
            source="fallback",
            reason="error:timeout",
            later="n2",
            earlier="n1",
        ),
        GATE_ADAPTER,
    ),
    (
        BeeBrief(
            bee="bee-1",
            problem="p",
            angle="caching",
            others={"bee-2": "i18n"},
            repo="/src",
            run_dir="/runs/r",
            model="m",
            token_budget=10_000,
            unsafe_bash=True,
        ),
        BeeBrief,
    ),
    (
        TranscriptEntry(event="tool_call", tool="grep", args={"pattern": "locale", "path": None}, call_id="c1", at=AT),
        TranscriptEntry,
    ),
    (TranscriptEntry(event="usage", data={"input_tokens": 10, "cost": 0.25}), TranscriptEntry),
    (Ready(bee="bee-1", pid=77, at=AT), BEE_MESSAGE_ADAPTER),
    (
        Utterance(bee="bee-1", seq=3, text="The cache key is built without the locale, so ...", at=AT),
        BEE_MESSAGE_ADAPTER,
    ),
    (Activity(bee="bee-2", text="grep locale src/", tool="grep", step=4), BEE_MESSAGE_ADAPTER),
    (Usage(bee="bee-2", model="m", input_tokens=100, output_tokens=20, cost_usd=0.001), BEE_MESSAGE_ADAPTER),
    (Received(bee="bee-2", delivered=["n1"], withheld=["n0"]), BEE_MESSAGE_ADAPTER),
    (Report(bee="bee-1", text="## Answer\nThe cache key.", outcome="reported"), BEE_MESSAGE_ADAPTER),
    (
        Notes(
            items=[
                InboxItem(
                    kind="correction",
                    note="n5",
                    bee="bee-1",
                    note_kind="finding",
                    text="t",
                    replaces="n1",
                    other_bee="bee-1",
                    other_text="old",
                )
            ]
        ),
        COORDINATOR_MESSAGE_ADAPTER,
    ),
    (WrapUp(reason="time"), COORDINATOR_MESSAGE_ADAPTER),
    (Stop(), COORDINATOR_MESSAGE_ADAPTER),
]


def _validate(target: TypeAdapter[Any] | type[BaseModel], data: Any) -> Any:
    if isinstance(target, TypeAdapter):
        return target.validate_python(data)
    return target.model_validate(data)


@pytest.mark.parametrize(("record", "target"), EXAMPLES, ids=lambda v: type(v).__name__)
def test_every_record_round_trips_through_one_json_line(record: BaseModel, target: Any) -> None:
    line = dumps(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    back = _validate(target, orjson.loads(line))
    assert type(back) is type(record)
    assert back == record


def test_unknown_fields_from_a_newer_writer_are_kept() -> None:
    data = orjson.loads(dumps(NOTE)) | {"novelty": 0.4, "tags": ["cache", "i18n"]}
    note = BOARD_ADAPTER.validate_python(data)
    assert note.model_extra == {"novelty": 0.4, "tags": ["cache", "i18n"]}
    assert orjson.loads(dumps(note)) == data


def test_a_board_line_of_unknown_type_is_rejected() -> None:
    with pytest.raises(ValidationError):
        BOARD_ADAPTER.validate_python({"type": "rumour", "id": "n1"})


def test_none_fields_are_left_out_but_none_inside_data_is_kept() -> None:
    data = orjson.loads(dumps(RUN_INFO))
    assert "reason" not in data["bees"][0]
    assert data["settings"]["nested"] == {"k": None}


def test_records_are_immutable() -> None:
    with pytest.raises(ValidationError):
        NOTE.text = "rewritten"  # type: ignore[misc]


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_number_json_cannot_hold_is_refused_when_the_record_is_built(value: float) -> None:
    # orjson would write null, and the line could not be read back as a note.
    with pytest.raises(ValidationError):
        Note(id="n1", bee="bee-1", kind="finding", text="t", score=value)
    with pytest.raises(ValidationError):
        Answer(question="q", type="boolean", p=value)


def test_note_kind_and_relation_are_closed_sets() -> None:
    with pytest.raises(ValidationError):
        Note(id="n1", bee="bee-1", kind="hunch", text="t", score=0.5)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Relation(later="n2", earlier="n1", relation="refines", score=0.5)  # type: ignore[arg-type]


def test_timestamps_are_iso_8601_utc_with_milliseconds() -> None:
    at = now_iso()
    assert at.endswith("Z") and len(at) == len(AT)
    parsed = parse_iso(at)
    assert parsed.utcoffset() is not None and parsed.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
    assert parse_iso(AT).microsecond == 123_000


def test_utterance_id_names_bee_and_sequence() -> None:
    assert Utterance(bee="bee-2", seq=14, text="x").uid == "bee-2#14"


# --------------------------------------------------------------------------- hive schema


def _instances_for(name: str) -> list[Any]:
    """The example records that the file or channel ``name`` carries, as their JSON lines decode."""
    target = SCHEMAS[name]
    return [orjson.loads(dumps(record)) for record, adapter in EXAMPLES if adapter is target or type(record) is target]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_json_schema_is_valid_and_accepts_real_records(name: str) -> None:
    schema = json_schema(name)
    jsonschema.Draft202012Validator.check_schema(schema)
    instances = _instances_for(name)
    assert instances, f"no example record for {name}"
    for instance in instances:
        jsonschema.validate(instance, schema)


def test_schema_rejects_a_note_without_text() -> None:
    data = orjson.loads(dumps(NOTE))
    del data["text"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json_schema("board.jsonl"))


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_hive_schema_prints_the_schema_of_each_name(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", name]) == 0
    out = capsys.readouterr().out
    assert orjson.loads(out) == json_schema(name)


def test_hive_schema_without_a_name_prints_all(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = orjson.loads(capsys.readouterr().out)
    assert list(printed) == list(SCHEMAS)
    for schema in printed.values():
        jsonschema.Draft202012Validator.check_schema(schema)


def test_hive_schema_of_an_unknown_name_is_a_one_line_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "votes.jsonl"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("hive: error: unknown record type 'votes.jsonl'")
    assert "board.jsonl" in lines[0]


# --------------------------------------------------------------------------- docs/formats.md


FORMATS_MD = Path(__file__).resolve().parent.parent / "docs" / "formats.md"
EXAMPLE_BLOCK = re.compile(r"<!-- example: (\S+) -->\n```json\n(.*?)```", re.DOTALL)


def _documented_examples() -> list[tuple[str, Any]]:
    examples: list[tuple[str, Any]] = []
    for name, body in EXAMPLE_BLOCK.findall(FORMATS_MD.read_text(encoding="utf-8")):
        if name.endswith(".json"):  # a whole document
            examples.append((name, orjson.loads(body)))
        else:  # one record per line
            examples += [(name, orjson.loads(line)) for line in body.splitlines() if line.strip()]
    return examples


def test_formats_md_has_an_example_for_every_schema() -> None:
    assert {name for name, _ in _documented_examples()} == set(SCHEMAS)


@pytest.mark.parametrize(("name", "example"), _documented_examples())
def test_every_example_in_formats_md_is_a_valid_record(name: str, example: Any) -> None:
    jsonschema.validate(example, json_schema(name))
    target = SCHEMAS[name]
    record = target.validate_python(example) if isinstance(target, TypeAdapter) else target.model_validate(example)
    assert orjson.loads(dumps(record)) == example  # the example is written exactly as hive writes it


@pytest.mark.parametrize(
    "at",
    [
        "2026-11-30T03:04:05.123Z",
        "2026-11-30T03:04:05.123+00:00",
        "2026-11-30T04:04:05.123+01:00",
        "2026-11-30T03:04:05.123",
    ],
)
def test_parsed_timestamps_are_always_aware_and_comparable(at: str) -> None:
    parsed = parse_iso(at)
    assert parsed.tzinfo is not None
    assert parsed == parse_iso(AT)


def test_every_ledger_row_carries_the_ledger_fields_even_when_null() -> None:
    row = GateDecision(id="g-000001", gate="correct", outcome="deliver", source="rule", note="n-0002", to="bee-1")
    written = json.loads(dumps(row))
    for key in ("reason", "version", "mode", "verdict", "state_digest", "answers", "tiers", "latency_ms", "tokens"):
        assert key in written, key
    assert written["reason"] is None and written["answers"] == {}
    assert "later" not in written and "text" not in written  # other null fields stay out
    assert GateDecision.model_validate(written) == row


@pytest.mark.parametrize(
    "line",
    [
        {"type": "note", "id": "n-1", "bee": "bee-1", "kind": "finding", "text": "t", "score": 0.9, "at": "yesterday"},
        {"type": "note", "id": "n-1", "bee": "bee-1", "kind": "finding", "text": "t", "score": 7},
        {"type": "relation", "later": "n-2", "earlier": "n-1", "relation": "supports", "score": -0.1},
    ],
)
def test_a_time_that_is_not_iso_8601_or_a_score_outside_0_1_is_refused(line: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        BOARD_ADAPTER.validate_python(line)


def test_the_schema_says_at_is_a_date_time_and_a_score_a_probability() -> None:
    schema = Note.model_json_schema()
    assert schema["properties"]["at"]["format"] == "date-time"
    assert (schema["properties"]["score"]["minimum"], schema["properties"]["score"]["maximum"]) == (0.0, 1.0)
