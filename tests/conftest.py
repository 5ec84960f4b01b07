from __future__ import annotations

import pytest

_SECRETS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "HIVE_MODEL", "HIVE_BASE_URL", "OPENAI_BASE_URL",
            "HIVE_GATE_MODE", "HIVE_JUDGE")


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> None:
    """No test sees the developer's keys, model or runs directory."""
    for name in _SECRETS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HIVE_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
    monkeypatch.setenv("HIVE_HOME", str(tmp_path_factory.mktemp("home")))
