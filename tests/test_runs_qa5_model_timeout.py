"""``HIVE_MODEL_TIMEOUT`` is read only where it applies: a model built with its own retry policy (the judge's
``llm:`` tier) neither uses it nor fails on a bad value, while every model of a run still does."""

from __future__ import annotations

import pytest

from hive.errors import UsageError
from hive.judge.tiers import build_tiers
from hive.providers.registry import infer_model
from hive.providers.retry import RetryPolicy

BAD = {"HIVE_BASE_URL": "http://127.0.0.1:9/v1", "HIVE_MODEL_TIMEOUT": "soon"}


def test_a_model_with_its_own_policy_ignores_it() -> None:
    model = infer_model("openai-compat:m", env=BAD, retry=RetryPolicy(timeout=5.0))
    assert model.retry.timeout == 5.0  # type: ignore[attr-defined]


def test_a_run_s_model_is_still_refused_a_bad_value() -> None:
    with pytest.raises(UsageError, match=r"^HIVE_MODEL_TIMEOUT must be a number of seconds"):
        infer_model("openai-compat:m", env=BAD)


def test_the_judge_s_llm_tier_is_built_whatever_it_says(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in BAD.items():
        monkeypatch.setenv(name, value)
    [tier] = build_tiers(["llm:openai-compat:m"])
    assert tier.id == "llm:openai-compat:m"
