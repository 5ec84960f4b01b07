"""A fallback caused by a failing tier behind an unsure one says so: with `local,llm:...` the model is asked
only what the cheap tier was unsure of, so its timeouts and errors are exactly the fallbacks it caused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from judge_http_server import judge_server

from hive.gates import GATE_CONTRACT, Gates
from hive.judge.engine import Judge
from hive.judge.tiers.http import HttpTier
from hive.judge.tiers.script import ScriptTier
from hive.records import Utterance

QUICK = 0.3
"""The timeout for the server's /slow path, which never answers."""
PATIENT = 10.0
"""The timeout for paths that answer at once (a short one could expire first on a loaded machine)."""
UTTERANCE = Utterance(bee="bee-1", seq=1, text="Running the export script drops the last three rows of the batch")


def script_tier(tmp_path: Path, answers: dict[str, Any]) -> ScriptTier:
    path = tmp_path / "rules.json"
    path.write_text(json.dumps([{"gate": "publish", "answers": answers}]))
    return ScriptTier.from_file(path, contract=GATE_CONTRACT)


@pytest.mark.parametrize(
    ("path", "reason"),
    [("/slow", "error:timeout"), ("/status/500", "error:server"), ("/garbage", "error:invalid_response")],
)
async def test_an_unsure_answer_with_the_deciding_tier_down_records_its_failure(
    tmp_path: Path, path: str, reason: str
) -> None:
    async with judge_server() as server:
        cheap = script_tier(tmp_path, {"news": 0.5, "kind": {"finding": 0.5}})
        judge = Judge([cheap, HttpTier(server.url(path), timeout=QUICK if path == "/slow" else PATIENT)])
        try:
            result = await Gates(judge, goal="find the lost rows").publish(UTTERANCE, focus="", board=[])
        finally:
            await judge.aclose()
    row = result.decision
    assert row is not None and not result.publish
    assert (row.source, row.reason, row.verdict) == ("fallback", reason, "unsure")
    assert [(call.tier, call.kept, call.error) for call in row.tiers] == [
        (cheap.id, ["news", "kind"], None),
        (f"http:{server.url(path)}", [], reason),
    ]


async def test_a_failure_on_questions_the_verdict_did_not_need_is_no_reason(tmp_path: Path) -> None:
    async with judge_server() as server:
        # news is a confident no, so the note is withheld whatever kind it is; only kind goes to the dead tier
        cheap = script_tier(tmp_path, {"news": 0.1, "kind": {"finding": 0.5}})
        for mode, source, reason in [("active", "judge", None), ("shadow", "shadow", "shadow")]:
            judge = Judge([cheap, HttpTier(server.url("/status/500"), timeout=PATIENT)])
            try:
                gates = Gates(judge, goal="find the lost rows", modes={"publish": mode})
                result = await gates.publish(UTTERANCE, focus="", board=[])
            finally:
                await judge.aclose()
            row = result.decision
            assert row is not None
            assert (row.source, row.reason, row.verdict) == (source, reason, "withhold")
            assert row.tiers[1].asked == ["kind"] and row.tiers[1].error == "error:server"


async def test_a_tier_settling_what_a_failed_tier_was_asked_leaves_no_reason(tmp_path: Path) -> None:
    async with judge_server() as server:
        settling = script_tier(tmp_path, {"news": 0.9, "kind": {"finding": 0.9}})
        judge = Judge([HttpTier(server.url("/status/503"), timeout=PATIENT), settling])
        try:
            result = await Gates(judge, goal="find the lost rows").publish(UTTERANCE, focus="", board=[])
        finally:
            await judge.aclose()
    row = result.decision
    assert row is not None and result.publish
    assert (row.source, row.reason) == ("judge", None)
