"""Judge tier specs and their construction.

A ``--judge`` value is a comma-separated cascade, cheapest first:

- ``local``: the embedded offline judge (:mod:`hive.judge.local`), which sets its own timeout (its first
  call loads the model);
- ``llm:<provider>:<model>``: a chat model through :func:`hive.providers.registry.infer_model`
  (e.g. ``llm:openai:gpt-4.1-mini``), 30 s;
- ``http:<url>``: a classifier endpoint taking ``{state, questions}`` (e.g.
  ``http:http://127.0.0.1:8700/evaluate``, or the bare URL ``http://127.0.0.1:8700/evaluate``), 8 s;
- ``script:<file>``: deterministic JSON rules, for tests and demos, 1 s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from urllib.parse import urlsplit

from hive.errors import SpecError
from hive.judge.base import Tier

DEFAULT_TIMEOUTS: dict[str, float] = {"http": 8.0, "llm": 30.0, "script": 1.0}
_EXAMPLE = "e.g. local,llm:openai:gpt-4.1-mini or http:http://127.0.0.1:8700/evaluate or script:rules.json"


def canonical(spec: str) -> str:
    """``spec`` as the cascade records it: a bare ``http://`` or ``https://`` URL is the ``http:`` tier."""
    return f"http:{spec}" if spec.startswith(("http://", "https://")) else spec


def resolve_tier_spec(spec: str, cwd: str | Path | None = None) -> str:
    """``spec`` with a file path made absolute (``script:``, ``llm:script:``), for a run that may be resumed
    from another directory."""
    from hive.providers.registry import resolve_spec

    kind, _, rest = spec.partition(":")
    if kind == "script":
        return f"script:{(Path(cwd or Path.cwd()) / rest).resolve()}"
    if kind == "llm":
        return f"llm:{resolve_spec(rest, cwd)}"
    return spec


def _check(spec: str) -> None:
    kind, _, rest = spec.partition(":")
    if kind == "local":
        if rest:
            raise SpecError(f"judge tier {spec!r}: 'local' takes no argument")
    elif kind == "llm":
        from hive.providers.registry import parse_model_spec

        provider, _, model = rest.partition(":")
        if not provider or not model.strip():
            raise SpecError(
                f"judge tier {spec!r}: write llm:<provider>:<model>, e.g. llm:openai:gpt-4.1-mini"
            )
        parse_model_spec(rest)
    elif kind == "http":
        url = urlsplit(rest)
        if url.scheme not in ("http", "https") or not url.netloc:
            raise SpecError(
                f"judge tier {spec!r}: write http:<url>, e.g. http:http://127.0.0.1:8700/evaluate"
            )
    elif kind == "script":
        if not rest.strip():
            raise SpecError(f"judge tier {spec!r}: write script:<file>, e.g. script:rules.json")
    else:
        raise SpecError(f"unknown judge tier {spec!r}; {_EXAMPLE}")


def parse_tiers(text: str) -> list[str]:
    """Split and check a ``--judge`` value; raise :class:`SpecError` (one line) on bad syntax."""
    specs = [canonical(part.strip()) for part in text.split(",")]
    if not text.strip() or any(not spec for spec in specs):
        raise SpecError(f"judge {text!r} has an empty tier; {_EXAMPLE}")
    for spec in specs:
        _check(spec)
    repeated = sorted({spec for spec in specs if specs.count(spec) > 1})
    if repeated:
        raise SpecError(f"judge tier {repeated[0]!r} is named twice in {text!r}")
    return specs


def build_tier(spec: str) -> Tier:
    """Construct one tier from a checked spec. Heavy imports (the local model, providers) happen here."""
    spec = canonical(spec)
    _check(spec)
    kind, _, rest = spec.partition(":")
    if kind == "local":
        from hive.judge.local import LocalTier

        return LocalTier()
    if kind == "llm":
        from hive.judge.tiers.llm import LlmTier
        from hive.providers.registry import infer_model
        from hive.providers.retry import RetryPolicy

        # one quick retry at most: a slow judge costs a decision its fallback, a slow bee costs the run
        retry = RetryPolicy(max_attempts=2, base_delay=0.5, max_delay=2.0, max_retry_after=2.0)
        return LlmTier(infer_model(rest, agent="judge", retry=retry), id=spec)
    if kind == "http":
        from hive.judge.tiers.http import HttpTier

        return HttpTier(rest)
    from hive.gates import GATE_CONTRACT  # the gates are built on the judge: imported only here
    from hive.judge.tiers.script import ScriptTier

    return ScriptTier.from_file(rest, contract=GATE_CONTRACT)


def build_tiers(specs: Sequence[str]) -> list[Tier]:
    """Construct the cascade's tiers in order. Raises :class:`SpecError` / :class:`UsageError` on bad specs
    or files. Tiers open their connections lazily, so a failure here leaves nothing to close."""
    return [build_tier(spec) for spec in specs]
