"""The coordinator's own model calls (planning the angles, writing the answer) are counted: in ``run.json``,
across a resume, in ``hive audit`` and in the live view's totals."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from hive.cli import main
from hive.coordinator import Coordinator
from hive.coordinator.options import StartOptions
from hive.coordinator.run import add_usage
from hive.errors import RunFailed
from hive.observe.audit import audit_run
from hive.observe.live import LiveState, Spent
from hive.providers import Metered, ModelResponse, TokenUsage
from hive.records import CoordinatorUsage, RunInfo
from hive.runs import RunPaths
from hive.testing import FunctionModel, LocalHTTPServer
from tests.hive_runs import load_info, ls, make_repo, only_run, publish_rules, report, turn, write_judge, write_script
from tests.test_coordinator_qa3_end import completion, pin_bees_to


def priced(input_tokens: int, output_tokens: int, cost: float | None) -> FunctionModel:
    return FunctionModel(lambda messages, tools, settings: ModelResponse(
        text="ok", usage=TokenUsage(input_tokens, output_tokens, cost)), name="m")


def test_metered_adds_up_every_reply_it_passes_on() -> None:
    model = Metered(priced(10, 5, 0.25))

    async def twice() -> None:
        for _ in range(2):
            assert (await model.request([], None, None)).text == "ok"

    asyncio.run(twice())
    assert (model.calls, model.usage) == (2, TokenUsage(20, 10, 0.5))


def test_usage_adds_to_what_earlier_runs_spent_and_an_unpriced_model_keeps_the_cost_unknown() -> None:
    unpriced = Metered(priced(10, 5, None))
    asyncio.run(unpriced.request([], None, None))
    first = add_usage(None, unpriced)
    assert first == CoordinatorUsage(model="m", calls=1, input_tokens=10, output_tokens=5, cost_usd=None)
    paid = Metered(priced(1, 2, 0.01))
    asyncio.run(paid.request([], None, None))
    assert add_usage(first, paid) == CoordinatorUsage(model="m", calls=2, input_tokens=11, output_tokens=7,
                                                      cost_usd=0.01)


def two_bee_options(root: Path, model: str, **extra: Any) -> StartOptions:
    script = write_script(root, {
        "bee-1": [turn("FOUND: app/export.py:5 drops the final partial batch of the rows.", ls()), report()],
        "bee-2": [turn("Reading the configuration module before saying anything at all.", ls()), report()],
    })
    repo = make_repo(root)
    pin_bees_to(repo, f"script:{script}")  # --model then serves the coordinator alone
    return StartOptions(problem="Why does the export drop rows?", repo=repo, model=model, bees=2,
                        judge=(f"script:{write_judge(root, publish_rules())}",), runs_dir=root / "runs", **extra)


def test_planning_and_the_answer_are_counted_in_run_json_the_audit_and_the_live_totals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with LocalHTTPServer() as server:
        server.reply(completion('["the batching", "the configuration"]'))
        server.reply(completion("The batching drops the last partial batch."))
        monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        asyncio.run(Coordinator(two_bee_options(tmp_path, "openai:gpt-4.1-mini")).run())
    run_dir = only_run(tmp_path / "runs")
    info = load_info(run_dir)
    assert info.settings["angles_from"] == "model" and [b.angle for b in info.bees] == [
        "the batching", "the configuration"]
    own = info.coordinator
    assert own is not None
    # completion() reports 10 prompt and 5 completion tokens; gpt-4.1-mini costs $0.40 / $1.60 per million
    assert (own.model, own.calls, own.input_tokens, own.output_tokens) == ("openai:gpt-4.1-mini", 2, 20, 10)
    assert own.cost_usd == pytest.approx((20 * 0.40 + 10 * 1.60) / 1e6)
    assert json.loads((run_dir / "run.json").read_text())["coordinator"]["calls"] == 2

    audit = audit_run(RunPaths(run_dir))
    assert audit.totals.coordinator_tokens == 30
    assert audit.totals.cost_usd == pytest.approx(own.cost_usd)  # the scripted bees have no price
    assert LiveState.from_info(info).tokens == sum(b.model_extra["input_tokens"] + b.model_extra["output_tokens"]
                                                   for b in info.bees if b.model_extra) + 30


def test_the_audit_text_names_the_coordinator_s_tokens_and_a_bee_s_figures_leave_them_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(Coordinator(two_bee_options(tmp_path, f"script:{tmp_path / 'script.json'}")).run())
    run_dir = only_run(tmp_path / "runs")
    own = load_info(run_dir).coordinator
    assert own is not None and own.calls == 2  # the script model plans and answers too
    assert main(["audit", str(run_dir)]) == 0
    assert f", coordinator {own.input_tokens + own.output_tokens}" in capsys.readouterr().out
    assert main(["audit", str(run_dir), "--bee", "bee-1", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["coordinator_tokens"] is None


def test_a_resume_adds_its_answer_call_to_what_the_stopped_run_spent(tmp_path: Path) -> None:
    opts = two_bee_options(tmp_path, f"script:{tmp_path / 'script.json'}", angles=("a", "b"))

    def block_the_answer(paths: RunPaths) -> None:
        paths.answer.mkdir()  # the answer is asked for, then cannot be written: the run fails after the call

    with pytest.raises(RunFailed):
        asyncio.run(Coordinator(opts, on_created=block_the_answer).run())
    run_dir = only_run(tmp_path / "runs")
    first = load_info(run_dir).coordinator
    assert first is not None and first.calls == 1  # angles given: no planning call
    (run_dir / "answer.md").rmdir()
    assert main(["resume", str(run_dir), "--quiet"]) == 0
    after = load_info(run_dir).coordinator
    assert after is not None and after.calls == 2
    assert after.input_tokens > first.input_tokens and after.output_tokens == 2 * first.output_tokens


def test_the_live_totals_fold_in_a_coordinator_call() -> None:
    state = LiveState.from_info(RunInfo(id="r", problem="p", repo="/r"))
    state.apply(Spent(tokens=30, cost_usd=0.5))
    state.apply(Spent(tokens=5))
    assert (state.tokens, state.cost_usd) == (35, 0.5)

