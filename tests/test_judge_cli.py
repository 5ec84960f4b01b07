"""``hive judge ask`` and ``hive judge eval`` end to end, with the script tier and invented fixture files."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from judge_http_server import closed_port

from hive.cli import main
from hive.gates import Gates
from hive.judge.base import RawAnswer, TierResult
from hive.judge.engine import Judge
from hive.judge.evaluate import PublishItem, evaluate, percentile, score_labels
from hive.judge.questions import Question

DATA = Path(__file__).parent / "data" / "judge"
RULES = f"script:{DATA / 'rules.json'}"


def run_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:  # type: ignore[type-arg]
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_ask_publish_shows_answers_zone_outcome_and_tier(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "judge",
            "ask",
            "publish",
            "--note",
            "Running it reproduces the bug in writer.py",
            "--goal",
            "export",
            "--judge",
            RULES,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines()[0].startswith("publish: publish · kind finding · score 0.95 · source judge")
    assert "decided by script:" in out
    assert "news      yes     p(yes) 0.95" in out
    assert "kind      picked  finding 0.90" in out


def test_ask_publish_json(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "judge", "ask", "publish", "--note", "Let me open writer.py now", "--judge", RULES)
    assert (result["outcome"], result["publish"], result["decided_by"]) == ("withhold", False, f"{RULES}")
    assert result["decision"]["answers"]["kind"]["zone"] == "escape"
    assert result["decision"]["text"] == "Let me open writer.py now"
    assert result["decision"]["reason"] is None and "state_digest" in result["decision"]  # the row as written
    # The answers, each with its probabilities, zone and tier, are also at the top.
    assert result["answers"]["kind"]["zone"] == "escape" and result["answers"]["news"]["tier"] == RULES
    assert set(result["answers"]["kind"]["probs"]) == {"finding", "dead_end", "decision", "blocker", "other"}


def test_decided_by_names_the_tiers_in_cascade_order(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cheap, strong = tmp_path / "z-cheap.json", tmp_path / "a-strong.json"
    cheap.write_text(json.dumps([{"gate": "publish", "answers": {"news": 0.95, "kind": {"finding": 0.5}}}]))
    strong.write_text(json.dumps([{"gate": "publish", "answers": {"kind": {"finding": 0.9}}}]))
    result = run_json(capsys, "judge", "ask", "publish", "--note", "writer.py drops the last batch",
                      "--judge", f"script:{cheap},script:{strong}")
    assert result["decided_by"] == f"script:{cheap}+script:{strong}"


def test_ask_publish_of_a_text_without_words_is_a_duplicate_rule_decision(capsys: pytest.CaptureFixture[str]) -> None:
    result = run_json(capsys, "judge", "ask", "publish", "--note", "a b", "--judge", RULES)
    assert (result["outcome"], result["decided_by"], result["answers"]) == ("duplicate", "rule", {})
    assert result["decision"]["outcome"] == "duplicate" and result["decision"]["reason"] == "no words"


def test_ask_answer(capsys: pytest.CaptureFixture[str]) -> None:
    args = ("judge", "ask", "answer", "--goal", "why rows drop", "--judge", RULES, "--note")
    answered = run_json(capsys, *args, "export.py:5 never yields the final partial batch")
    assert (answered["outcome"], answered["answered"], answered["score"], answered["decided_by"]) == (
        "answered", True, 0.95, RULES)
    assert answered["decision"]["gate"] == "answer"
    unsure = run_json(capsys, *args, "reading export.py next")
    assert (unsure["outcome"], unsure["answered"], unsure["decided_by"]) == ("continue", False, "fallback")


def test_ask_deliver_and_relate(capsys: pytest.CaptureFixture[str]) -> None:
    deliver = run_json(
        capsys, "judge", "ask", "deliver", "--note", "flush is skipped", "--focus", "the cron job", "--judge", RULES
    )
    assert (deliver["outcome"], deliver["score"], deliver["decision"]["answers"]["useful"]["zone"]) == (
        "skip",
        0.15,
        "no",
    )
    relate = run_json(
        capsys,
        "judge",
        "ask",
        "relate",
        "--earlier",
        "rows are lost in the writer",
        "--later",
        "rows are lost in the query, not in the writer",
        "--same-bee",
        "--judge",
        RULES,
    )
    assert (relate["outcome"], relate["relation"], relate["same_bee"]) == ("supersedes", "supersedes", True)
    cross = run_json(capsys, "judge", "ask", "relate", "--earlier", "a", "--later", "b", "--judge", RULES)
    assert (cross["outcome"], cross["decided_by"], cross["decision"]["reason"]) == ("none", "fallback", "unsure")


def test_ask_shows_yes_or_no_for_a_flag_not_python_s_true_or_false(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "ask", "relate", "--earlier", "rows are lost in the writer", "--later",
                 "rows are lost in the query, not in the writer", "--same-bee", "--judge", RULES]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert " · same_bee yes · " in first and "True" not in first
    deliver = ["judge", "ask", "deliver", "--note", "flush is skipped", "--focus", "the cron job", "--judge", RULES]
    assert main(deliver) == 0
    assert " · by_rule no · " in capsys.readouterr().out.splitlines()[0]


def test_ask_deliver_a_decision_with_the_judge_down(capsys: pytest.CaptureFixture[str]) -> None:
    down = f"http:http://127.0.0.1:{closed_port()}/evaluate"
    decision = run_json(
        capsys,
        "judge",
        "ask",
        "deliver",
        "--note",
        "we patch the writer",
        "--kind",
        "decision",
        "--focus",
        "anything",
        "--judge",
        down,
    )
    assert (decision["deliver"], decision["by_rule"], decision["decided_by"]) == (True, True, "rule")
    finding = run_json(
        capsys, "judge", "ask", "deliver", "--note", "the writer skips flush", "--focus", "writer", "--judge", down
    )
    assert (finding["deliver"], finding["decision"]["reason"]) == (False, "error:unreachable")


@pytest.mark.parametrize(
    "args",
    [
        ["judge", "ask", "publish", "--note", "x", "--judge", "jev"],
        ["judge", "ask", "deliver", "--note", "x", "--focus", "y", "--kind", "rumour", "--judge", RULES],
        ["judge", "ask", "publish", "--note", "x", "--judge", "script:/nonexistent/rules.json"],
        ["judge", "ask", "publish", "--note", "  ", "--judge", RULES],
        ["judge", "ask", "deliver", "--note", "the writer skips flush", "--focus", "", "--judge", RULES],
        ["judge", "ask", "relate", "--earlier", "a b c", "--later", "", "--judge", RULES],
        ["judge", "ask", "answer", "--note", "", "--judge", RULES],
        # bytes that are not UTF-8 reach Python as surrogates (os.fsdecode): they used to end in a traceback
        ["judge", "ask", "publish", "--note", "FOUND: caf\udce9 cache.py drops the key", "--judge", RULES],
        ["judge", "ask", "publish", "--note", "FOUND: cache.py drops the key", "--goal", "caf\udce9", "--judge", RULES],
        ["judge", "ask", "publish", "--note", "FOUND: cache.py drops the key", "--focus", "\udce9", "--judge", RULES],
        ["judge", "ask", "relate", "--earlier", "cache.py drops it", "--later", "\udce9 no", "--judge", RULES],
    ],
)
def test_ask_with_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("hive: error:") and err.count("\n") == 1


def test_a_rule_file_nested_too_deeply_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text("[" * 100_000)
    assert main(["judge", "ask", "publish", "--note", "cache.py drops the key", "--judge", f"script:{rules}"]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"gate": "publish", "answers": {"newz": 0.9}}, "publish asks news, kind, not 'newz'"),
        ({"gate": "publish", "answers": {"kind": {"findingz": 0.9}}}, "'findingz' is not an option"),
        ({"gate": "publish", "answers": {"kind": 0.9}}, "a choice takes option → probability"),
        ({"gate": "publish", "answers": {"news": -3}}, "between 0 and 1"),
        ({"gate": "deliver", "answers": {"useful": {"yes": 1.0}}}, "a boolean takes one probability"),
        ({"gate": "relate", "answers": {"relation": {"supports": 0.8, "none": 0.5}}}, "add up to 1.30"),
        ({"gate": "relate", "answers": {"relation": {"supports": 0.5, "none": 0.2, "supersedes": 0.1,
                                                      "contradicts": 0.1}}}, "all its options add up to 0.90, not 1"),
        ({"gate": "publish", "when": {"text": "x"}, "answers": {}}, "'text' is not a field of the publish state"),
    ],
)
def test_a_rule_file_with_a_mistake_is_refused_when_loaded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], rule: dict[str, object], message: str
) -> None:
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([rule]))
    assert main(["judge", "ask", "publish", "--note", "x", "--judge", f"script:{rules}"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("hive: error:") and err.count("\n") == 1 and message in err, err


def test_eval_publish(capsys: pytest.CaptureFixture[str]) -> None:
    report = run_json(capsys, "judge", "eval", str(DATA / "publish.jsonl"), "--gate", "publish", "--judge", RULES)
    assert report["gate"] == "publish" and report["n"] == 6
    assert report["accuracy"] == pytest.approx(3 / 6)
    assert report["coverage"] == pytest.approx(4 / 6)
    assert report["confident_wrong"] == pytest.approx(1 / 6)
    assert report["news_accuracy"] == pytest.approx(5 / 6)
    assert report["confusion"]["dead_end"] == {"finding": 1}
    assert report["confusion"]["routine"] == {"routine": 1, "unsure": 1}
    assert report["latency_ms_p50"] <= report["latency_ms_p95"]
    for key in ("macro_f1", "latency_ms_p50", "latency_ms_p95"):
        assert key in report


def test_eval_relate_and_deliver(capsys: pytest.CaptureFixture[str]) -> None:
    relate = run_json(capsys, "judge", "eval", str(DATA / "relate.jsonl"), "--gate", "relate", "--judge", RULES)
    assert (relate["n"], relate["accuracy"], relate["coverage"]) == (4, 0.75, 0.75)
    assert (relate["related_accuracy"], relate["related_coverage"], relate["related_confident_wrong"]) == (
        0.75,
        1.0,
        0.25,
    )
    assert relate["cross_bee_supersedes_wrong"] == 0 and relate["confusion"]["unrelated"] == {"unsure": 1}
    deliver = run_json(capsys, "judge", "eval", str(DATA / "deliver.jsonl"), "--gate", "deliver", "--judge", RULES)
    assert (deliver["accuracy"], deliver["coverage"], deliver["confident_wrong"]) == (0.5, 1.0, 0.5)
    assert deliver["right_when_confident"] == 0.5


def test_eval_prints_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", "eval", str(DATA / "relate.jsonl"), "--gate", "relate", "--judge", RULES]) == 0
    out = capsys.readouterr().out
    assert "relate · 4 items" in out and "confident-wrong 0.000" in out and "(related vs none)" in out


@pytest.mark.parametrize(
    ("content", "gate", "message"),
    [
        ('{"text": "x", "kind": "finding", "news": true}\nnot json\n', "publish", "line 2 is not JSON"),
        ('{"text": "x", "kind": "gossip", "news": true}\n', "publish", "line 1 is not a publish item: kind"),
        ('{"a": "x", "b": "y", "relation": "supports"}\n', "relate", "same_bee"),
        ("\n\n", "deliver", "has no items"),
        ('{"note": "x", "focus": "y", "useful": true}\n', "verify", "unknown gate"),
        ('{"text": "  ", "kind": "routine", "news": false}\n', "publish", "line 1 is not a publish item: text"),
        ('{"note": "x", "focus": "", "useful": true}\n', "deliver", "line 1 is not a deliver item: focus"),
        ('{"text": "x", "kind": "routine", "news": false}\n', "relate", "(it is a publish item: --gate publish?)"),
        ("[" * 100_000 + "\n", "publish", "line 1 is not an item (nested too deeply)"),
        ('{"a": "x", "b": "y", "same_bee": true, "relation": "none"}\n', "deliver", "(it is a relate item: --gate"),
    ],
)
def test_eval_with_a_bad_file_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, gate: str, message: str
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_text(content)
    assert main(["judge", "eval", str(path), "--gate", gate, "--judge", RULES]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert main(["judge", "eval", str(tmp_path / "missing.jsonl"), "--gate", "publish", "--judge", RULES]) == 2


def test_scores_count_unsure_as_wrong_and_macro_f1_over_labels() -> None:
    scores = score_labels(["a", "a", "b", "b"], ["a", "unsure", "a", "b"])
    assert (scores.accuracy, scores.coverage, scores.confident_wrong) == (0.5, 0.75, 0.25)
    assert scores.right_when_confident == pytest.approx(2 / 3)
    assert score_labels(["a"], ["unsure"]).right_when_confident == 0.0
    # a: precision 1/2, recall 1/2 → 0.5; b: precision 1, recall 1/2 → 2/3
    assert scores.macro_f1 == pytest.approx((0.5 + 2 / 3) / 2)
    assert scores.confusion == {"a": {"a": 1, "unsure": 1}, "b": {"a": 1, "b": 1}}
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5 and percentile([], 95) == 0.0


def test_eval_asks_each_item_under_its_own_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rules = tmp_path / "goal.json"
    rules.write_text(json.dumps([
        {"gate": "publish", "when": {"goal": "drop rows"}, "answers": {"news": 0.95, "kind": {"finding": 0.9}}},
        {"gate": "publish", "answers": {"news": 0.05, "kind": {"other": 0.9}}},
    ]))
    items = tmp_path / "items.jsonl"
    items.write_text("\n".join(json.dumps(i) for i in [
        {"text": "FOUND: the writer skips the last batch", "kind": "finding", "news": True,
         "problem": "why does the export drop rows?"},
        {"text": "FOUND: the writer skips the last batch", "kind": "routine", "news": False},
    ]) + "\n")
    report = run_json(capsys, "judge", "eval", str(items), "--gate", "publish", "--judge", f"script:{rules}")
    assert (report["accuracy"], report["news_accuracy"]) == (1.0, 1.0)


def test_eval_reads_the_variations_a_labelled_file_may_have(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A byte order mark, CRLF ends, blank lines, extra fields, null optional fields, numeric ids, string booleans,
    the gates' own names for the escape (`other`, `none`) and raw Unicode line separators inside a string (valid
    JSON, written by ensure_ascii=False) are all read as the plain file would be."""
    plain = run_json(capsys, "judge", "eval", str(DATA / "publish.jsonl"), "--gate", "publish", "--judge", RULES)
    items = [json.loads(line) for line in (DATA / "publish.jsonl").read_text().splitlines()]
    for number, item in enumerate(items):
        item |= {"id": number, "bee": None, "problem": None, "focus": None, "news": str(item["news"]).lower(),
                 "labeller": {"who": "ann"}, "note": "pasted from a page:\u2028a line separator, a \x85 NEL"}
        if item["kind"] == "routine":
            item["kind"] = "other"
    varied = tmp_path / "publish.jsonl"
    varied.write_bytes(b"\xef\xbb\xbf" + "\r\n\r\n".join(json.dumps(i, ensure_ascii=False) for i in items).encode()
                       + b"\r\n")
    report = run_json(capsys, "judge", "eval", str(varied), "--gate", "publish", "--judge", RULES)
    for key in ("n", "accuracy", "coverage", "confident_wrong", "macro_f1", "news_accuracy", "confusion"):
        assert report[key] == plain[key], key

    pairs = [json.loads(line) for line in (DATA / "relate.jsonl").read_text().splitlines()]
    for pair in pairs:
        pair |= {"relation": "none" if pair["relation"] == "unrelated" else pair["relation"], "a_kind": None}
    (tmp_path / "relate.jsonl").write_text("\n".join(json.dumps(p) for p in pairs))
    relate = run_json(capsys, "judge", "eval", str(tmp_path / "relate.jsonl"), "--gate", "relate", "--judge", RULES)
    assert relate["confusion"]["unrelated"] == {"unsure": 1} and relate["n"] == 4


class LoadingTier:
    """A tier that, like `local`, loads a model lazily: it records whether it was loaded before being asked."""

    id = "loading"
    untrusted: frozenset[str] = frozenset()
    timeout = 5.0

    def __init__(self) -> None:
        self.events: list[str] = []

    def load(self) -> None:
        self.events.append("load")

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        self.events.append("answer")
        return TierResult(answers={"news": RawAnswer(p=0.1), "kind": RawAnswer(probs={"other": 0.9, "finding": 0.1,
                                                                                       "dead_end": 0.0,
                                                                                       "decision": 0.0,
                                                                                       "blocker": 0.0})})

    async def aclose(self) -> None:
        return None


async def test_eval_loads_the_judge_before_timing_the_first_item() -> None:
    """A model's load is `load_ms`, not the first item's latency (with a one-item file it was all of p50/p95)."""
    tier = LoadingTier()
    items = [PublishItem(text="Let me open writer.py and look at flush() next.", kind="routine", news=False)]
    report = await evaluate(Gates(Judge([tier]), goal=""), "publish", items)
    assert tier.events == ["load", "answer"]
    assert report["load_ms"] >= 0 and report["accuracy"] == 1.0


def test_ask_loads_the_judge_before_the_decision_it_shows(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The latency `ask` shows is the decision's, as in a run (where the model loads while the bees start)."""
    tier = LoadingTier()
    monkeypatch.setattr("hive.judge.tiers.build_tiers", lambda specs: [tier])
    assert main(["judge", "ask", "publish", "--note", "Let me open writer.py and look at flush() next."]) == 0
    assert tier.events == ["load", "answer"]
    assert "publish: withhold" in capsys.readouterr().out


def test_eval_human_report_counts_in_words(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    one = tmp_path / "one.jsonl"
    one.write_text((DATA / "publish.jsonl").read_text().splitlines()[0] + "\n")
    assert main(["judge", "eval", str(one), "--gate", "publish", "--judge", RULES]) == 0
    out = capsys.readouterr().out
    assert "publish · 1 item · judge" in out and "0 items with a tier error" in out and "1 items" not in out
