"""``HIVE_MODEL_TIMEOUT``: the limit on one request attempt, for models slower than the 120 s default."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from hive.cli import main
from hive.cli.start import _check_model_timeout
from hive.coordinator import Coordinator
from hive.errors import UsageError
from hive.providers import Message
from hive.providers.registry import infer_model, model_timeout
from hive.testing import LocalHTTPServer
from tests.hive_runs import make_repo, only_run
from tests.test_coordinator_qa3_end import completion
from tests.test_coordinator_usage import two_bee_options


def test_unset_is_none_and_a_number_of_seconds_is_read() -> None:
    assert model_timeout({}) is None and model_timeout({"HIVE_MODEL_TIMEOUT": " "}) is None
    assert model_timeout({"HIVE_MODEL_TIMEOUT": "600"}) == 600.0
    assert model_timeout({"HIVE_MODEL_TIMEOUT": "2.5"}) == 2.5


@pytest.mark.parametrize("value", ["ten", "0", "-5", "nan", "inf", "1e9", "0.5"])
def test_anything_else_is_a_one_line_usage_error(value: str) -> None:
    with pytest.raises(UsageError, match=r"^HIVE_MODEL_TIMEOUT must be a number of seconds from 1 to 86400, not "):
        model_timeout({"HIVE_MODEL_TIMEOUT": value})


def test_it_bounds_each_attempt_of_an_http_model_which_then_retries() -> None:
    with LocalHTTPServer() as server:
        server.reply(completion("too late"), delay=4.0)
        server.reply(completion("in time"))
        model = infer_model("openai-compat:m", env={"HIVE_BASE_URL": f"{server.url}/v1", "HIVE_MODEL_TIMEOUT": "1"})

        async def ask() -> str:
            try:
                return (await model.request([Message("user", "hi")])).text
            finally:
                await model.aclose()

        started = time.monotonic()
        assert asyncio.run(ask()) == "in time"
        assert time.monotonic() - started < 3.5  # the slow attempt was given up after 1 s, not awaited
        assert len(server.requests) == 2


def test_the_coordinator_s_planning_call_is_bounded_by_it_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LocalHTTPServer() as server:
        server.reply(completion('["too", "late"]'), delay=4.0)
        server.reply(completion('["the batching", "the configuration"]'))
        server.reply(completion("The answer."))
        monkeypatch.setenv("HIVE_BASE_URL", f"{server.url}/v1")
        monkeypatch.setenv("HIVE_MODEL_TIMEOUT", "1")
        asyncio.run(Coordinator(two_bee_options(tmp_path, "openai-compat:m")).run())
    info = only_run(tmp_path / "runs") / "run.json"
    assert '"the batching"' in info.read_text() and '"too"' not in info.read_text()


def test_start_refuses_a_bad_value_in_one_line_before_anything_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIVE_MODEL_TIMEOUT", "soon")
    monkeypatch.setenv("HIVE_BASE_URL", "http://127.0.0.1:9/v1")
    code = main(["start", "why?", "--repo", str(make_repo(tmp_path)), "--model", "openai-compat:m",
                 "--runs-dir", str(tmp_path / "runs"), "--quiet"])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert err == "hive: error: HIVE_MODEL_TIMEOUT must be a number of seconds from 1 to 86400, not 'soon'"
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


def test_a_timeout_the_watchdog_would_cut_short_is_warned(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIVE_MODEL_TIMEOUT", "600")
    _check_model_timeout(300.0, ["ollama:qwen2.5-coder:7b", None])
    assert "HIVE_MODEL_TIMEOUT (600 s) is not below --stall-timeout (300 s)" in capsys.readouterr().err
    _check_model_timeout(900.0, ["ollama:qwen2.5-coder:7b"])
    assert capsys.readouterr().err == ""
    _check_model_timeout(300.0, ["script:/tmp/bees.json", None])  # no HTTP request to wait for
    assert capsys.readouterr().err == ""
