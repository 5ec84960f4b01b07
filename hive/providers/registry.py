"""From a ``provider:model`` spec to a :class:`~hive.providers.base.Model`.

Specs::

    openai:<model>          OPENAI_API_KEY (required), OPENAI_BASE_URL (optional)
    anthropic:<model>       ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL (optional)
    ollama:<model>          OLLAMA_HOST (optional, default http://localhost:11434); no key
    openai-compat:<model>   HIVE_BASE_URL (required), HIVE_API_KEY (optional)
    script:<file>           a JSON script, see hive.providers.script

HIVE_MODEL_TIMEOUT (seconds, optional) replaces the 120 s limit on one request attempt of every HTTP model
(bees, angle planning, the answer; not the judge's ``llm:`` tier), for models slower than that.

Everything after the first colon is the model name, so ``ollama:qwen2.5-coder:7b`` names the model
``qwen2.5-coder:7b``. Provider modules are imported only when a model of theirs is made, so that a bee process
that plays a script never loads the HTTP stack.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hive.errors import SpecError, UsageError
from hive.providers.base import Model

if TYPE_CHECKING:
    import httpx

    from hive.providers.retry import RetryPolicy
    from hive.providers.script import Script

PROVIDERS = ("openai", "anthropic", "ollama", "openai-compat", "script")
REQUIRED_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
OLLAMA_DEFAULT_HOST = "http://localhost:11434"
MODEL_TIMEOUT_ENV = "HIVE_MODEL_TIMEOUT"
MAX_MODEL_TIMEOUT = 86_400.0


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: ``provider`` and ``model`` (for ``script``, the file path)."""

    provider: str
    model: str

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"


def parse_model_spec(spec: str) -> ModelSpec:
    """Split ``provider:model``; raise :class:`SpecError` when it is malformed or the provider is unknown."""
    provider, colon, model = spec.strip().partition(":")
    if not colon or not provider:
        raise SpecError(f"model spec {spec!r} must look like provider:model, e.g. openai:gpt-4.1-mini")
    if provider not in PROVIDERS:
        raise SpecError(f"unknown model provider {provider!r} in {spec!r} (known: {', '.join(PROVIDERS)})")
    if not model.strip() or (provider != "script" and any(c.isspace() for c in model)):
        raise SpecError(f"model spec {spec!r} names no valid model after {provider + ':'!r}")
    return ModelSpec(provider, model)


def check_model_spec(spec: str, env: Mapping[str, str] | None = None) -> None:
    """Validate ``spec`` without any network: syntax, provider, required key, script file.

    Raises :class:`SpecError` for a malformed spec, an unknown provider or an invalid script, and
    :class:`UsageError` naming the missing environment variable. Messages are one line.
    """
    _configure(parse_model_spec(spec), os.environ if env is None else env)


def infer_model(
    spec: str,
    *,
    agent: str = "bee",
    env: Mapping[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    retry: RetryPolicy | None = None,
) -> Model:
    """Make the model ``spec`` names, checked as :func:`check_model_spec` does. No I/O but reading a script.

    ``agent`` says who is asking (a bee id such as ``bee-1``, ``planner`` or ``answer``); only the script
    model uses it. ``transport`` and ``retry`` go to the HTTP providers (tests, and callers such as the
    judge's ``llm:`` tier that want a shorter retry policy).
    """
    parsed = parse_model_spec(spec)
    env = os.environ if env is None else env
    config = _configure(parsed, env)
    # Read only when it applies: a caller with its own policy (the judge's llm: tier) must not fail on it.
    timeout = model_timeout(env) if retry is None and isinstance(config, _Endpoint) else None
    if timeout is not None:
        from hive.providers.retry import RetryPolicy

        retry = RetryPolicy(timeout=timeout)
    if isinstance(config, _Script):
        from hive.providers.script import ScriptModel

        return ScriptModel(config.script, path=parsed.model, agent=agent)
    if parsed.provider == "anthropic":
        from hive.providers.anthropic import AnthropicModel

        assert config.api_key is not None  # _configure insists on it
        return AnthropicModel(
            parsed.model, api_key=config.api_key, base_url=config.base_url, retry=retry, transport=transport
        )
    from hive.providers.openai import OpenAIChatModel

    return OpenAIChatModel(
        parsed.model,
        provider=parsed.provider,
        base_url=config.base_url,
        api_key=config.api_key,
        retry=retry,
        transport=transport,
    )


def resolve_spec(spec: str, cwd: str | Path | None = None) -> str:
    """``spec`` with a ``script:`` path made absolute, for processes that run in another directory."""
    parsed = parse_model_spec(spec)
    if parsed.provider != "script":
        return spec.strip()
    return f"script:{(Path(cwd or Path.cwd()) / parsed.model).resolve()}"


@dataclass(frozen=True)
class _Endpoint:
    base_url: str
    api_key: str | None


@dataclass(frozen=True)
class _Script:
    script: Script


def model_timeout(env: Mapping[str, str] | None = None) -> float | None:
    """``HIVE_MODEL_TIMEOUT`` in seconds, or ``None`` when it is not set; a one-line :class:`UsageError` when it
    is not a number of seconds from 1 to a day."""
    text = (os.environ if env is None else env).get(MODEL_TIMEOUT_ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = float("nan")
    if not 1.0 <= seconds <= MAX_MODEL_TIMEOUT:  # NaN fails this too
        raise UsageError(f"{MODEL_TIMEOUT_ENV} must be a number of seconds from 1 to {MAX_MODEL_TIMEOUT:.0f}, "
                         f"not {text[:40]!r}")
    return seconds


def _configure(spec: ModelSpec, env: Mapping[str, str]) -> _Endpoint | _Script:
    def value(name: str) -> str | None:
        found = env.get(name, "").strip()
        return found or None

    if spec.provider == "script":
        from hive.providers.script import load_script

        return _Script(load_script(spec.model))
    required = REQUIRED_KEYS.get(spec.provider)
    if required and value(required) is None:
        raise UsageError(f"model {str(spec)!r} needs {required} in the environment")
    for variable in (required, "HIVE_API_KEY" if spec.provider == "openai-compat" else None):
        if variable and (key := value(variable)) is not None:
            check_key(variable, key)
    if spec.provider == "openai":
        from hive.providers.openai import OPENAI_BASE_URL

        return _Endpoint(
            _checked_url(value("OPENAI_BASE_URL") or OPENAI_BASE_URL, "OPENAI_BASE_URL"),
            value("OPENAI_API_KEY"),
        )
    if spec.provider == "anthropic":
        from hive.providers.anthropic import ANTHROPIC_BASE_URL

        return _Endpoint(
            _checked_url(value("ANTHROPIC_BASE_URL") or ANTHROPIC_BASE_URL, "ANTHROPIC_BASE_URL"),
            value("ANTHROPIC_API_KEY"),
        )
    if spec.provider == "ollama":
        return _Endpoint(_checked_url(ollama_base_url(value("OLLAMA_HOST")), "OLLAMA_HOST"), None)
    base_url = value("HIVE_BASE_URL")
    if base_url is None:
        raise UsageError(f"model {str(spec)!r} needs HIVE_BASE_URL (the server's OpenAI-compatible /v1 URL)")
    return _Endpoint(_checked_url(base_url, "HIVE_BASE_URL"), value("HIVE_API_KEY"))


def check_key(variable: str, key: str) -> None:
    """Refuse a key an HTTP header cannot carry (a quote or a line break pasted with it), naming the variable and
    the position of the first bad character, never the key."""
    for position, char in enumerate(key, start=1):
        if not (char.isascii() and char.isprintable()):
            what = "a line break" if char in "\r\n" else "a control character" if char.isascii() else (
                "a non-ASCII character")
            raise UsageError(
                f"{variable} has {what} at position {position}, which an HTTP header cannot carry; copy the key again"
            )


def ollama_base_url(host: str | None) -> str:
    """The OpenAI-compatible URL of an Ollama server, from ``OLLAMA_HOST`` as Ollama itself reads it."""
    if not host:
        return f"{OLLAMA_DEFAULT_HOST}/v1"
    if "://" not in host:
        host = f"http://{host}"
    scheme, _, rest = host.partition("://")
    authority, slash, path = rest.partition("/")
    if ":" not in authority.rsplit("]", 1)[-1]:
        authority += ":11434"
    return f"{scheme}://{authority}{slash}{path}".rstrip("/") + "/v1"


def _checked_url(url: str, variable: str) -> str:
    """``url`` if it is an http(s) URL with a host (and a valid port), else a one-line :class:`UsageError`."""
    from urllib.parse import urlsplit

    if not url.startswith(("http://", "https://")):
        raise UsageError(f"{variable} must be an http:// or https:// URL, not {_without_password(url)!r}")
    problem = None
    if any(char.isspace() or not char.isprintable() for char in url):
        problem = "it contains a space or a control character"
    else:
        try:
            parts = urlsplit(url)
            parts.port  # noqa: B018 - reading it is the check: a port out of range or not a number raises
        except ValueError as e:
            problem = str(e)
        else:
            if not parts.hostname:
                problem = "it names no host"
    if problem is not None:
        raise UsageError(f"{variable} is not a valid URL ({problem}): {_without_password(url)!r}")
    return url


def _without_password(url: str) -> str:
    """``url`` for an error message: credentials written into it (``https://user:token@host``) left out."""
    return re.sub(r"(?<=//)[^/@]*@", "[redacted]@", url)
