"""``hive audit`` against a run whose every record is known (tests/observe_runs.py), plus damaged runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from observe_runs import RUN_ID, GoneReader, board_records, gate_decisions, run_info, write_run

from hive.cli import main
from hive.observe.audit import BeeUsage, audit_run, compute_audit, format_audit, gate_figures, percentile
from hive.observe.labels import Label, calibration_table, decision_correct, label_point
from hive.observe.reading import deciding_reading, verdict_of
from hive.records import Answer, GateDecision, Note, RunInfo
from hive.store import write_json_atomic


@pytest.fixture
def runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    runs_dir = tmp_path / "runs"
    runs_dir.mkdir()
    monkeypatch.setenv("HIVE_RUNS_DIR", str(runs_dir))
    return runs_dir


def audit_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    """The ``--json`` report and what went to stderr."""
    assert main(["audit", *args, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


# --------------------------------------------------------------------------- the known run


def test_json_figures_of_the_known_run(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    report, _ = audit_json(capsys, RUN_ID)

    assert report["funnel"] == {
        "utterances": 8,
        "duplicates": 1,
        "judged": 7,
        "withheld": 2,
        "published": 5,
        "delivered": 4,
        "delivered_by_judge": 2,
        "delivered_by_rule": 2,
        "capped": 1,
        "notes_reaching_a_bee": 3,
        "corrections": 1,
        "conflict_notices": 1,
    }
    gates = report["gates"]
    assert list(gates) == ["publish", "deliver", "relate", "correct", "conflict", "withheld", "verify"]
    publish = gates["publish"]
    split = ("decisions", "yes", "no", "unsure", "fallback")
    assert [publish[k] for k in split] == [8, 4, 3, 1, 2]
    assert publish["by_source"] == {"judge": 5, "fallback": 2, "rule": 1}
    assert publish["fallback_reasons"] == {"unsure": 1, "error:timeout": 1}
    assert (publish["latency_ms_p50"], publish["latency_ms_p95"], publish["tokens"]) == (400.0, 880.0, 60)
    assert publish["tiers"] == {"local": 5, "llm:m-judge": 1}
    assert publish["tier_errors"] == {"llm:m-judge timeout": 1}
    deliver = gates["deliver"]
    assert [deliver[k] for k in split] == [7, 4, 3, 0, 0]
    assert deliver["by_source"] == {"judge": 3, "shadow": 1, "rule": 3}
    assert deliver["verdicts"] == {"deliver": 1}  # the shadow decision: judged yes, not used
    assert (deliver["latency_ms_p50"], deliver["latency_ms_p95"]) == (25.0, 38.5)
    relate = gates["relate"]
    assert [relate[k] for k in split] == [5, 4, 0, 1, 1]
    assert (relate["latency_ms_p50"], relate["latency_ms_p95"]) == (70.0, 88.0)
    assert {
        g: (gates[g]["decisions"], gates[g]["yes"], gates[g]["no"])
        for g in ("correct", "conflict", "withheld", "verify")
    } == {"correct": (1, 1, 0), "conflict": (1, 1, 0), "withheld": (1, 0, 1), "verify": (1, 1, 0)}

    assert report["relations"] == {
        "by_type": {"supersedes": 1, "contradicts": 2, "supports": 1},
        "same_bee": 0,
        "cross_bee": 4,
    }
    assert report["corrections"] == 1
    disputes = report["disputes"]
    assert (disputes["opened"], disputes["resolved"], disputes["unsettled"], disputes["verifiers"]) == (
        2,
        1,
        1,
        1,
    )
    assert disputes["verifier_runs"] == [
        {
            "bee": "verify-1",
            "dispute": "d-1",
            "notes": ["n-1", "n-4"],
            "outcome": "reported",
            "reason": "settled",
        }
    ]

    bees = {b["id"]: b for b in report["bees"]}
    assert list(bees) == ["bee-1", "bee-2", "bee-3", "verify-1"]
    rows = {
        b: (
            r["utterances"],
            r["published"],
            r["received"],
            r["reached"],
            r["tokens"],
            r["cost_usd"],
            r["outcome"],
        )
        for b, r in bees.items()
    }
    assert rows == {
        "bee-1": (2, 1, 2, 1, 1200, 0.01, "reported"),  # usage from run.json
        "bee-2": (2, 2, 2, 2, 470, 0.002, "reported"),  # usage from its transcript
        "bee-3": (3, 1, 2, 2, None, None, "cut_short"),  # no usage anywhere
        "verify-1": (1, 1, 0, 1, None, None, "reported"),
    }
    assert report["totals"] == {"bee_tokens": 1670, "judge_tokens": 60, "coordinator_tokens": None, "cost_usd": 0.012,
                                "unpriced_tokens": 60}  # the judge's: its rows carry no price
    assert report["status"] == "finished"
    assert report["warnings"] == []


def test_nearest_threshold_decisions_come_first_with_their_text(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(runs)
    near = audit_json(capsys, "--near", "3")[0]["near_threshold"]
    assert [(n["decision"], n["question"], n["p"], n["bar"]) for n in near] == [
        ("g-07", "news", 0.81, 0.8),
        ("g-16", "useful", 0.82, 0.8),
        ("g-23", "relation=supersedes", 0.93, 0.9),  # across bees: the 0.9 bar, not 0.6
    ]
    assert near[0]["text"] == "FOUND: rows with a NULL email are dropped."
    assert near[2]["other_text"] == "FOUND: rows with a NULL email are dropped."


def test_text_report_reads_like_the_prior_art(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    assert main(["audit", RUN_ID]) == 0
    out = capsys.readouterr().out
    assert "Funnel: 7 judged, 5 published, 4 delivered" in out
    assert "8 utterances → 1 duplicates dropped → 7 judged → 5 published (2 withheld) → 4 delivered" in out
    assert "2 by the judge, 2 by rule" in out and "1 capped" in out
    assert "publish: fallback error:timeout 1, unsure 1; decided by local 5, llm:m-judge 1" in out
    assert "Disputes: 2 opened, 1 resolved, 1 left unsettled · verifiers spawned: 1" in out
    assert "verify-1 on d-1 (n-1 vs n-4): reported (settled)" in out
    assert "g-07 publish news p 0.810 vs bar 0.80 → publish (judge, bee-3)" in out
    assert "\x1b" not in out
    publish_row = next(line for line in out.splitlines() if line.strip().startswith("publish "))
    assert publish_row.split() == ["publish", "8", "4", "3", "1", "5", "2", "1", "0", "400", "880", "60"]


def test_gate_filter_keeps_one_gate(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    report, _ = audit_json(capsys, "--gate", "relate")
    assert list(report["gates"]) == ["relate"]
    assert {n["gate"] for n in report["near_threshold"]} == {"relate"}
    assert report["filters"] == {"gate": "relate"}


def test_a_gate_that_decided_nothing_still_has_its_figures(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    report, _ = audit_json(capsys, "--gate", "answer")  # the run was not a race: no answer decisions
    assert list(report["gates"]) == ["answer"]
    assert [report["gates"]["answer"][key] for key in ("decisions", "yes", "no", "unsure", "fallback")] == [0] * 5


def test_bee_filter_keeps_what_concerns_one_bee(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_run(runs)
    report, _ = audit_json(capsys, "--bee", "bee-3")
    funnel = report["funnel"]
    assert (funnel["utterances"], funnel["duplicates"], funnel["published"], funnel["delivered"]) == (
        3,
        1,
        1,
        1,
    )
    assert [b["id"] for b in report["bees"]] == ["bee-3"]
    # d-1 involves bee-3's n-4 and is resolved by a relation between other bees' notes; d-2 is not bee-3's.
    assert (
        report["disputes"]["opened"],
        report["disputes"]["resolved"],
        report["disputes"]["verifiers"],
    ) == (1, 1, 1)
    assert report["gates"]["publish"]["decisions"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["no-such-run"], "no run matches 'no-such-run'"),
        ([RUN_ID, "--gate", "nonsense"], "unknown gate 'nonsense'"),
        ([RUN_ID, "--bee", "bee-9"], "no bee 'bee-9'"),
        ([RUN_ID, "--labels", "/nonexistent/labels.jsonl"], "does not exist"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    runs: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    write_run(runs)
    assert main(["audit", *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("args", [[], ["--json"]])
def test_a_reader_that_goes_away_ends_audit_quietly_and_successfully(
    runs: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    write_run(runs)
    monkeypatch.setattr(sys, "stdout", GoneReader())
    assert main(["audit", RUN_ID, *args]) == 0
    assert capsys.readouterr().err == ""


# --------------------------------------------------------------------------- damaged runs


def test_torn_last_line_is_a_warning_and_the_figures_stand(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_run(runs)
    with paths.gate.open("ab") as f:
        f.write(b'{"id":"g-99","gate":"publish","outcome":"pub')
    report, err = audit_json(capsys, RUN_ID)
    lines = len(gate_decisions())
    assert report["funnel"]["utterances"] == 8
    assert report["gates"]["publish"]["decisions"] == 8
    assert len(report["warnings"]) == 1
    assert f"line {lines + 1}: ignored a torn last line" in report["warnings"][0]
    assert f"line {lines + 1}" in err


def test_corrupt_middle_lines_are_skipped_with_their_line_numbers(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_run(runs)
    board = paths.board.read_bytes().splitlines(keepends=True)
    paths.board.write_bytes(b"".join([*board[:3], b"\x00garbage{{\n", *board[3:]]))
    gate = paths.gate.read_bytes().splitlines(keepends=True)
    paths.gate.write_bytes(b"".join([gate[0], b'{"type": "not a decision"}\n', *gate[1:]]))
    assert main(["audit", RUN_ID]) == 0
    captured = capsys.readouterr()
    assert "board.jsonl: line 4: skipped a corrupt line" in captured.err
    assert "gate.jsonl: line 2: skipped a corrupt line" in captured.err
    assert "Funnel: 7 judged, 5 published, 4 delivered" in captured.out
    assert "2 warning(s) while reading" in captured.out


@pytest.mark.parametrize("name", ["board.jsonl", "gate.jsonl"])
def test_a_board_or_gate_log_that_cannot_be_read_is_bad_input(
    runs: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    paths = write_run(runs)
    (paths.dir / name).unlink()
    (paths.dir / name).mkdir()  # unreadable even to root
    assert main(["audit", RUN_ID]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"hive: error: cannot read {paths.dir / name}: Is a directory\n"


def test_a_transcript_that_cannot_be_read_is_a_warning_and_the_audit_stands(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = write_run(runs)
    paths.transcript("bee-2").unlink()
    paths.transcript("bee-2").mkdir()
    report, err = audit_json(capsys, RUN_ID)
    assert err == (f"hive: warning: cannot read {paths.transcript('bee-2')}: Is a directory; "
                   "bee-2's tokens and cost are left out\n")
    assert report["warnings"] == [err.removeprefix("hive: warning: ").strip()]
    assert report["funnel"]["utterances"] == 8
    assert [(b["id"], b["tokens"]) for b in report["bees"]][:2] == [("bee-1", 1200), ("bee-2", None)]


def test_a_crashed_run_reads_as_interrupted(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    write_run(runs, status="running", pid=int(gone.stdout))
    report, _ = audit_json(capsys, RUN_ID)
    assert report["status"] == "interrupted"
    assert report["funnel"]["published"] == 5


def test_a_dead_run_lasts_until_its_last_sign_of_life_in_audit_and_ls_alike(
    runs: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    paths = write_run(runs, status="running", pid=int(gone.stdout))  # started at 03:00:00, no ended_at
    start = datetime(2026, 11, 30, 3, 0, tzinfo=UTC).timestamp()
    for path, seconds in ((paths.run_json, 10), (paths.board, 95), (paths.gate, 90),
                          (paths.transcript("bee-2"), 180)):
        os.utime(path, (start + seconds, start + seconds))
    for _ in range(2):  # and it does not grow
        report, _ = audit_json(capsys, RUN_ID)
        assert (report["status"], report["ended_at"], report["duration_s"]) == ("interrupted", None, 180.0)
        assert main(["ls", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)[0]["duration_s"] == 180.0
    assert main(["ls"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[:4] == [RUN_ID, "interrupted", "4", "3m00s"]


def test_a_resumed_run_says_so(runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info = run_info().model_copy(update={"resumed_at": ["2026-11-30T04:00:00.000Z"]})
    report = compute_audit(info, board_records(), gate_decisions())
    assert report.resumed_at == ["2026-11-30T04:00:00.000Z"]
    assert compute_audit(run_info(), [], []).resumed_at == []
    paths = write_run(runs)
    write_json_atomic(paths.run_json, info)
    assert main(["audit", RUN_ID]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(" · resumed 1×")


def test_an_empty_run_has_zero_figures(runs: Path) -> None:
    report = compute_audit(RunInfo(id="r", problem="p", repo=".", status="failed"), [], [])
    assert report.funnel.utterances == 0 and report.funnel.delivered == 0
    assert set(report.gates) == {"publish", "deliver", "relate"}
    assert report.gates["publish"].latency_ms_p50 is None
    assert report.near_threshold == []
    assert report.totals.bee_tokens is None and report.totals.cost_usd is None


def test_what_bees_wrote_never_drives_the_terminal() -> None:
    clear = "\x1b[2J\x1b]0;pwned\x07"
    info = run_info()
    failed = info.bees[0].model_copy(update={"reason": f"ProviderError: {clear}"})
    info = info.model_copy(update={"bees": [failed, *info.bees[1:]]})
    decisions = [d.model_copy(update={"text": f"{d.text} {clear}"}) if d.text else d for d in gate_decisions()]
    board = [r.model_copy(update={"text": f"{r.text} {clear}"}) if isinstance(r, Note) else r
             for r in board_records()]
    lines = format_audit(compute_audit(info, board, decisions, near=None))
    assert not any(c in line for line in lines for c in "\x1b\x07")
    assert any("(ProviderError: \\x1b[2J\\x1b]0;pwned\\x07)" in line for line in lines)
    assert sum("\\x1b[2J" in line for line in lines) > 5  # the near-threshold texts


# --------------------------------------------------------------------------- labels and calibration


def test_labels_give_accuracy_and_calibration(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(runs)
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"decision": "g-07", "label": True},  # published at 0.81: right
        {"decision": "g-03", "label": True},  # withheld at 0.10: wrong
        {"decision": "g-02", "label": "dead_end"},  # published as a finding: wrong
        {"decision": "g-22", "label": "supersedes"},  # unsure at 0.85 across bees, so none: wrong
        {"decision": "g-23", "label": "supersedes"},  # right
        {"decision": "g-20", "label": "unrelated"},  # said contradicts: wrong
        {"decision": "g-99", "label": True},  # not in this run
        {"decision": "g-10", "label": None},  # not labelled yet
    ]
    labels.write_text(
        "\n".join(json.dumps(r) for r in rows[:4])
        + "\nnot json\n"
        + "\n".join(json.dumps(r) for r in rows[4:])
    )  # no final newline: still read
    full, err = audit_json(capsys, RUN_ID, "--labels", str(labels))
    report = full["labels"]
    assert (report["labelled"], report["correct"], report["accuracy"]) == (6, 2, 0.3333)
    assert report["unlabelled"] == 1 and report["unknown"] == ["g-99"]
    assert report["by_gate"] == {
        "publish": {"n": 3, "correct": 1, "accuracy": 0.3333},
        "relate": {"n": 3, "correct": 1, "accuracy": 0.3333},
    }
    tables = {(t["group"], t["kind"]): t for t in report["calibration"]}
    assert set(tables) == {
        ("publish.news", "boolean"),
        ("publish.kind", "choice"),
        ("relate.relation (cross-bee)", "choice"),
    }
    relation = tables[("relate.relation (cross-bee)", "choice")]
    bars = {row["bar"]: row for row in relation["bars"]}
    # At 0.6 all three readings are confident and one is wrong; at 0.9 only the right one is left.
    assert bars[0.6] == {
        "bar": 0.6,
        "coverage": 1.0,
        "accuracy": 0.6667,
        "precision": 0.6667,
        "confident_wrong": 0.3333,
    }
    assert bars[0.9] == {
        "bar": 0.9,
        "coverage": 0.3333,
        "accuracy": 0.3333,
        "precision": 1.0,
        "confident_wrong": 0.0,
    }
    news = tables[("publish.news", "boolean")]
    filled = [(b["lo"], b["n"], b["observed"]) for b in news["bins"] if b["n"]]
    assert filled == [(0.1, 1, 1.0), (0.8, 1, 1.0)]
    assert {row["bar"]: row["confident_wrong"] for row in news["bars"]}[
        0.9
    ] == 0.5  # 0.1 is a confident no at 0.9
    assert "line 5: skipped a bad label line" in err


def test_a_label_that_means_nothing_is_skipped_and_the_last_of_two_counts(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(runs)
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"decision": "g-07", "label": False},  # published at 0.81: would be wrong, but line 4 overrides it
        {"decision": "g-03", "label": "banana"},  # no option of a publish decision
        {"decision": "g-20", "label": "finding"},  # a note kind is no relation
        {"decision": "g-07", "label": True},  # right
        {"decision": "g-23", "label": "Supersedes"},  # right, whatever the case
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    full, err = audit_json(capsys, RUN_ID, "--labels", str(labels))
    report = full["labels"]
    assert (report["labelled"], report["correct"]) == (2, 2)
    assert report["by_gate"] == {"publish": {"n": 1, "correct": 1, "accuracy": 1.0},
                                 "relate": {"n": 1, "correct": 1, "accuracy": 1.0}}
    assert err.splitlines() == [
        f"hive: warning: {labels}: line 2: skipped label 'banana' for g-03: a publish decision takes true, false or "
        "one of finding, dead_end, decision, blocker, other",
        f"hive: warning: {labels}: line 3: skipped label 'finding' for g-20: a relate decision takes true, false or "
        "one of supersedes, contradicts, supports, none",
        f"hive: warning: {labels}: line 4: g-07 was labelled on line 1 too: the last label counts",
    ]
    assert full["warnings"] == [line.removeprefix("hive: warning: ") for line in err.splitlines()]


def test_export_labels_writes_a_template_that_reads_back(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(runs)
    template = tmp_path / "to-label.jsonl"
    assert main(["audit", RUN_ID, "--export-labels", str(template)]) == 0
    lines = [json.loads(line) for line in template.read_text().splitlines()]
    judged = 15  # every decision with a probability to read; rules and the timed-out one have none
    assert len(lines) == judged
    assert lines[0]["decision"] == "g-07" and lines[0]["label"] is None and lines[0]["text"]
    assert [line["distance"] for line in lines] == sorted(line["distance"] for line in lines)
    assert f"wrote {judged} decisions to label" in capsys.readouterr().err

    report = audit_json(capsys, RUN_ID, "--labels", str(template))[0]["labels"]
    assert (report["labelled"], report["unlabelled"], report["unknown"]) == (0, judged, [])


def test_labels_saved_by_a_windows_editor_read_whole(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_run(runs)
    labels = tmp_path / "labels.jsonl"
    rows = ['{"decision": "g-07", "label": true}', '{"decision": "g-01", "label": true}']
    labels.write_bytes("\r\n".join(rows).encode("utf-8-sig") + b"\r\n")  # a byte order mark, CRLF lines
    report, err = audit_json(capsys, RUN_ID, "--labels", str(labels))
    assert report["labels"]["labelled"] == 2
    assert err == ""


@pytest.mark.parametrize("name", ["board.jsonl", "gate.jsonl", "run.json", "answer.md", "bees/bee-2/x.jsonl"])
def test_export_labels_never_overwrites_the_run_it_audits(
    runs: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    paths = write_run(runs)
    (paths.dir / "answer.md").write_text("the answer")
    before = {p: p.read_bytes() for p in paths.dir.rglob("*") if p.is_file()}
    assert main(["audit", RUN_ID, "--export-labels", str(paths.dir / ".." / RUN_ID / name)]) == 2
    assert "would overwrite run" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in paths.dir.rglob("*") if p.is_file()} == before


def test_export_labels_respects_near(runs: Path, tmp_path: Path) -> None:
    write_run(runs)
    template = tmp_path / "to-label.jsonl"
    assert main(["audit", RUN_ID, "--export-labels", str(template), "--near", "2"]) == 0
    assert [json.loads(line)["decision"] for line in template.read_text().splitlines()] == ["g-07", "g-16"]


# --------------------------------------------------------------------------- the pure pieces


def _decision(**fields: Any) -> GateDecision:
    base: dict[str, Any] = {"id": "g", "gate": "publish", "outcome": "publish", "source": "judge"}
    return GateDecision(**(base | fields))


@pytest.mark.parametrize(
    ("fields", "verdict"),
    [
        ({}, "yes"),
        ({"outcome": "withhold"}, "no"),
        ({"outcome": "duplicate", "source": "rule"}, "no"),
        ({"source": "fallback", "reason": "unsure"}, "unsure"),
        ({"source": "fallback", "reason": "abstain", "outcome": "withhold"}, "unsure"),
        ({"source": "fallback", "reason": "error:timeout", "outcome": "withhold"}, "no"),
        ({"gate": "relate", "outcome": "none"}, "no"),
        ({"gate": "deliver", "outcome": "capped", "source": "rule"}, "no"),
        ({"gate": "verify", "outcome": "spawn", "source": "rule"}, "yes"),
    ],
)
def test_verdict_of(fields: dict[str, Any], verdict: str) -> None:
    assert verdict_of(_decision(**fields)) == verdict


def test_deciding_reading_uses_the_bar_of_each_answer() -> None:
    boolean_low = _decision(answers={"news": Answer(question="news", type="boolean", p=0.3)})
    assert deciding_reading(boolean_low) is not None
    assert (deciding_reading(boolean_low).bar, round(deciding_reading(boolean_low).distance, 3)) == (0.2, 0.1)  # type: ignore[union-attr]
    supersedes = {"relation": Answer(question="relation", type="choice", pick="supersedes", p=0.7)}
    assert deciding_reading(_decision(gate="relate", answers=supersedes)).bar == 0.9  # type: ignore[union-attr]
    assert deciding_reading(_decision(gate="relate", answers=supersedes), same_bee=True).bar == 0.6  # type: ignore[union-attr]
    neutral = {"news": Answer(question="news", type="boolean", p=0.5, tier="untrusted")}
    assert deciding_reading(_decision(answers=neutral)) is None


def test_choice_probability_falls_back_to_probs() -> None:
    answer = Answer(question="kind", type="choice", pick="finding", probs={"finding": 0.62, "other": 0.38})
    reading = deciding_reading(_decision(answers={"kind": answer}))
    assert reading is not None and reading.p == 0.62


@pytest.mark.parametrize(
    ("fields", "label", "correct"),
    [
        ({"kind": "finding"}, "finding", True),
        ({"kind": "finding"}, "dead_end", False),
        ({"outcome": "withhold"}, "other", True),
        ({"outcome": "withhold"}, False, True),
        ({"gate": "relate", "outcome": "none"}, "unrelated", True),
        ({"gate": "relate", "outcome": "supports"}, "supports", True),
        ({"gate": "deliver", "outcome": "skip"}, True, False),
    ],
)
def test_decision_correct(fields: dict[str, Any], label: bool | str, correct: bool) -> None:
    assert decision_correct(_decision(**fields), label) is correct


def test_a_yes_no_label_on_a_relation_reads_one_minus_p_none() -> None:
    answer = Answer(
        question="relation",
        type="choice",
        pick="supports",
        p=0.7,
        probs={"supports": 0.7, "none": 0.2, "supersedes": 0.05, "contradicts": 0.05},
    )
    point = label_point(_decision(gate="relate", answers={"relation": answer}), True, one_bee=True)
    assert point is not None
    assert (point.group, point.kind, round(point.p, 3), point.truth) == (
        "relate.relation (same bee)",
        "boolean",
        0.8,
        True,
    )


def test_calibration_bins_cover_the_top_edge() -> None:
    from hive.observe.labels import LabelPoint

    points = [LabelPoint("g.q", "boolean", 1.0, True), LabelPoint("g.q", "boolean", 0.0, False)]
    table = calibration_table("g.q", points)
    assert (table.bins[0].n, table.bins[9].n) == (1, 1)
    assert table.bars[-1].accuracy == 1.0


def test_percentile_interpolates() -> None:
    assert percentile([], 0.5) is None
    assert percentile([5.0], 0.95) == 5.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.5


def test_gate_figures_sum_tier_tokens_when_the_decision_has_none() -> None:
    from hive.records import TierCall

    figures = gate_figures([_decision(tiers=[TierCall(tier="a", tokens=7), TierCall(tier="b", tokens=5)])])
    assert figures.tokens == 12


def test_audit_run_reads_what_compute_audit_is_given(tmp_path: Path) -> None:
    paths = write_run(tmp_path)
    expected = compute_audit(run_info(), board_records(), gate_decisions(), {"bee-2": BeeUsage(470, 0.002)})
    assert audit_run(paths) == expected


def test_label_lines_keep_the_template_context() -> None:
    label = Label.model_validate({"decision": "g-1", "label": "finding", "text": "FOUND: x", "p": 0.61})
    assert (label.decision, label.label) == ("g-1", "finding")
