"""Spec parsing and checking, without network, and what infer_model builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hive.errors import SpecError, UsageError
from hive.providers.anthropic import AnthropicModel
from hive.providers.base import Model
from hive.providers.openai import OpenAIChatModel
from hive.providers.registry import (
    ModelSpec,
    check_model_spec,
    infer_model,
    ollama_base_url,
    parse_model_spec,
    resolve_spec,
)
from hive.providers.script import ScriptModel


@pytest.mark.parametrize(
    ("spec", "provider", "model"),
    [
        ("openai:gpt-4.1-mini", "openai", "gpt-4.1-mini"),
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("ollama:qwen2.5-coder:7b", "ollama", "qwen2.5-coder:7b"),
        ("openai-compat:meta-llama/llama-3.3-70b:free", "openai-compat", "meta-llama/llama-3.3-70b:free"),
        ("script:examples/demo script.json", "script", "examples/demo script.json"),
        ("  openai:gpt-4.1 ", "openai", "gpt-4.1"),
    ],
)
def test_parse_model_spec(spec: str, provider: str, model: str) -> None:
    assert parse_model_spec(spec) == ModelSpec(provider, model)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpt-4.1-mini", "model spec 'gpt-4.1-mini' must look like provider:model, e.g. openai:gpt-4.1-mini"),
        (":gpt-4", "must look like provider:model"),
        ("openai:", "names no valid model after 'openai:'"),
        ("openai:gpt 4", "names no valid model"),
        (
            "gemini:gemini-2.5-pro",
            "unknown model provider 'gemini' in 'gemini:gemini-2.5-pro' (known: openai, ",
        ),
        ("OpenAI:gpt-4.1", "unknown model provider 'OpenAI'"),
    ],
)
def test_malformed_or_unknown_specs_are_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(SpecError) as caught:
        check_model_spec(spec, env={"OPENAI_API_KEY": "k"})
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4.1-mini", "OPENAI_API_KEY"),
        ("anthropic:claude-haiku-4-5", "ANTHROPIC_API_KEY"),
        ("openai-compat:llama", "HIVE_BASE_URL"),
    ],
)
def test_missing_environment_is_a_usage_error_naming_the_variable(spec: str, variable: str) -> None:
    for env in ({}, {variable: "  "}):
        with pytest.raises(UsageError) as caught:
            check_model_spec(spec, env=env)
        assert not isinstance(caught.value, SpecError)
        assert variable in str(caught.value)
        assert "\n" not in str(caught.value)
        with pytest.raises(UsageError):
            infer_model(spec, env=env)


@pytest.mark.parametrize(
    ("spec", "env", "message"),
    [
        ("openai:gpt-4.1", {"OPENAI_API_KEY": "sk-proj-\u201csecretvalue"},
         "OPENAI_API_KEY has a non-ASCII character at position 9"),
        ("anthropic:claude-haiku-4-5", {"ANTHROPIC_API_KEY": "sk-ant-secret\nvalue"},
         "ANTHROPIC_API_KEY has a line break at position 14"),
        ("openai-compat:x", {"HIVE_BASE_URL": "http://127.0.0.1:8000/v1", "HIVE_API_KEY": "tok\x01secretvalue"},
         "HIVE_API_KEY has a control character at position 4"),
    ],
)
def test_a_key_no_http_header_can_carry_is_a_usage_error_that_does_not_show_it(
    spec: str, env: dict[str, str], message: str
) -> None:
    # Before, the first model call failed inside the bee with "UnicodeEncodeError: 'ascii' codec can't encode".
    with pytest.raises(UsageError) as caught:
        check_model_spec(spec, env=env)
    assert str(caught.value) == f"{message}, which an HTTP header cannot carry; copy the key again"
    assert "secret" not in str(caught.value)


@pytest.mark.parametrize(
    ("spec", "env", "message"),
    [
        ("openai:x", {"OPENAI_BASE_URL": "http://"}, "OPENAI_BASE_URL is not a valid URL (it names no host): 'http://'"),
        ("anthropic:x", {"ANTHROPIC_BASE_URL": "https://api.example.com:99999"},
         "ANTHROPIC_BASE_URL is not a valid URL (Port out of range 0-65535): 'https://api.example.com:99999'"),
        ("openai-compat:x", {"HIVE_BASE_URL": "http://[::1/v1"},
         "HIVE_BASE_URL is not a valid URL (Invalid IPv6 URL): 'http://[::1/v1'"),
        ("openai-compat:x", {"HIVE_BASE_URL": "https://exa\tmple.com/v1"},
         "HIVE_BASE_URL is not a valid URL (it contains a space or a control character): 'https://exa\\tmple.com/v1'"),
        ("ollama:x", {"OLLAMA_HOST": "gpu box"},
         "OLLAMA_HOST is not a valid URL (it contains a space or a control character): 'http://gpu box:11434/v1'"),
        ("openai-compat:x", {"HIVE_BASE_URL": "http://me:tok3n-secret@host:70000/v1"},
         "HIVE_BASE_URL is not a valid URL (Port out of range 0-65535): 'http://[redacted]@host:70000/v1'"),
    ],
)
def test_a_base_url_no_client_can_use_is_a_usage_error(spec: str, env: dict[str, str], message: str) -> None:
    # Before, some of these passed the check and then crashed every bee with httpx.InvalidURL.
    env = {"OPENAI_API_KEY": "sk-test-000000", "ANTHROPIC_API_KEY": "sk-ant-000000", **env}
    with pytest.raises(UsageError) as caught:
        check_model_spec(spec, env=env)
    assert str(caught.value) == message


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UsageError):
        check_model_spec("openai:gpt-4.1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-000000")
    check_model_spec("openai:gpt-4.1")
    assert isinstance(infer_model("openai:gpt-4.1"), OpenAIChatModel)


def test_keyless_providers_pass_the_check() -> None:
    check_model_spec("ollama:llama3.2", env={})
    check_model_spec("openai-compat:x", env={"HIVE_BASE_URL": "http://127.0.0.1:8000/v1"})


def test_base_urls_must_be_http() -> None:
    with pytest.raises(UsageError, match="HIVE_BASE_URL must be an http:// or https:// URL"):
        check_model_spec("openai-compat:x", env={"HIVE_BASE_URL": "localhost:8000"})
    with pytest.raises(UsageError, match="OPENAI_BASE_URL"):
        check_model_spec("openai:x", env={"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "ftp://x"})


def test_infer_model_builds_each_provider() -> None:
    env = {
        "OPENAI_API_KEY": "sk-o-0000000000",
        "ANTHROPIC_API_KEY": "sk-ant-000000000",
        "HIVE_BASE_URL": "http://127.0.0.1:9/v1/",
    }
    openai = infer_model("openai:gpt-4.1-mini", env=env)
    assert isinstance(openai, OpenAIChatModel)
    assert (openai.name, openai.base_url) == ("openai:gpt-4.1-mini", "https://api.openai.com/v1")
    claude = infer_model("anthropic:claude-sonnet-4-5", env=env)
    assert isinstance(claude, AnthropicModel)
    assert claude.name == "anthropic:claude-sonnet-4-5"
    ollama = infer_model("ollama:qwen2.5-coder:7b", env=env)
    assert isinstance(ollama, OpenAIChatModel)
    assert (ollama.name, ollama.base_url) == ("ollama:qwen2.5-coder:7b", "http://localhost:11434/v1")
    compat = infer_model("openai-compat:llama", env=env)
    assert isinstance(compat, OpenAIChatModel)
    assert compat.base_url == "http://127.0.0.1:9/v1"
    for model in (openai, claude, ollama, compat):
        assert isinstance(model, Model)
        assert "sk-" not in repr(model)


@pytest.mark.parametrize(
    ("host", "url"),
    [
        (None, "http://localhost:11434/v1"),
        ("0.0.0.0", "http://0.0.0.0:11434/v1"),
        ("gpu-box:8080", "http://gpu-box:8080/v1"),
        ("https://ollama.example.com", "https://ollama.example.com:11434/v1"),
        ("http://[::1]", "http://[::1]:11434/v1"),
        ("http://[::1]:7000/", "http://[::1]:7000/v1"),
    ],
)
def test_ollama_host_is_read_as_ollama_reads_it(host: str | None, url: str) -> None:
    assert ollama_base_url(host) == url


def test_script_specs(tmp_path: Path) -> None:
    script = tmp_path / "run.json"
    script.write_text(json.dumps({"angles": ["a"], "bees": {"bee-1": [{"say": "hi"}]}}))
    check_model_spec(f"script:{script}", env={})
    model = infer_model(f"script:{script}", agent="bee-1", env={})
    assert isinstance(model, ScriptModel)
    assert (model.name, model.agent) == (f"script:{script}", "bee-1")
    with pytest.raises(SpecError, match="not found"):
        check_model_spec(f"script:{tmp_path / 'missing.json'}", env={})


def test_resolve_spec_makes_script_paths_absolute(tmp_path: Path) -> None:
    assert resolve_spec("script:demo.json", cwd=tmp_path) == f"script:{tmp_path / 'demo.json'}"
    assert resolve_spec(" ollama:qwen2.5-coder:7b ") == "ollama:qwen2.5-coder:7b"


def test_making_a_model_loads_no_http_stack() -> None:
    """A bee must start small: httpx is imported on the first request, not before."""
    code = (
        "import sys\n"
        "from hive.providers.registry import infer_model\n"
        "infer_model('ollama:qwen2.5-coder:7b', env={})\n"
        "infer_model('anthropic:claude-haiku-4-5', env={'ANTHROPIC_API_KEY': 'k'})\n"
        "print(sorted(m for m in ('httpx', 'httpcore', 'anyio') if m in sys.modules))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
