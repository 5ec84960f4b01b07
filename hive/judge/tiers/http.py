"""``http:<url>``: a generic classifier endpoint.

Request (POST, JSON)::

    {"gate": "deliver",
     "state": {"note": "...", "kind": "finding", "from_bee": "bee-2", "focus": "..."},
     "questions": [{"name": "useful", "type": "boolean", "text": "Is `note` useful ...?",
                    "capability": "classify"}]}

Choices also carry ``options`` (option → meaning) and ``escape``; scores carry ``levels``.

Response::

    {"answers": {"useful": {"p": 0.91}, "kind": {"probs": {"finding": 0.7, ...}}, "level_q": {"level": 1.5}},
     "tokens": 0}

A question left out of ``answers`` is an abstention. Redirects are followed (a 307 or 308 keeps the POST).
Failures map to kinds: a timeout → ``timeout``, a refused or broken connection → ``unreachable``, HTTP
401/403 → ``auth``, 429 → ``rate_limited``, 5xx → ``server``, other 4xx, a redirect that cannot be followed
and a redirect loop → ``bad_request``, a body that is not the shape above → ``invalid_response``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from hive.judge.base import RawAnswer, TierFailure, TierResult
from hive.judge.questions import ChoiceQuestion, Question, ScoreQuestion
from hive.judge.tiers import DEFAULT_TIMEOUTS
from hive.providers.base import MAX_TOKEN_COUNT


def question_payload(question: Question) -> dict[str, Any]:
    """A question as JSON, for an endpoint or a prompt."""
    payload: dict[str, Any] = {
        "name": question.name,
        "type": question.type,
        "text": question.text,
        "capability": question.capability,
    }
    if isinstance(question, ChoiceQuestion):
        payload["options"] = question.options
        payload["escape"] = question.escape
    elif isinstance(question, ScoreQuestion):
        payload["levels"] = list(question.levels)
    return payload


def status_failure(status: int, body: str = "") -> TierFailure:
    """The failure kind for an HTTP error status."""
    detail = f"HTTP {status}: {' '.join(body.split())[:200]}"
    if status in (401, 403):
        return TierFailure("auth", detail)
    if status == 429:
        return TierFailure("rate_limited", detail)
    if status >= 500:
        return TierFailure("server", detail)
    return TierFailure("bad_request", detail)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def parse_answer(value: Any) -> RawAnswer:
    """One answer object (``{"p"}``, ``{"probs"}`` or ``{"level"}``; a bare number is a ``p``)."""
    if _number(value) is not None:
        return RawAnswer(p=_number(value))
    if not isinstance(value, dict):
        raise TierFailure("invalid_response", f"answer is not an object: {str(value)[:80]}")
    if "probs" in value:
        probs = value["probs"]
        if not isinstance(probs, dict) or any(_number(p) is None for p in probs.values()):
            raise TierFailure("invalid_response", "probs is not a map of option to number")
        return RawAnswer(probs={str(option): float(p) for option, p in probs.items()})
    if "p" in value:
        if _number(value["p"]) is None:
            raise TierFailure("invalid_response", f"p is not a number: {value['p']!r}")
        return RawAnswer(p=_number(value["p"]))
    if "level" in value:
        if _number(value["level"]) is None:
            raise TierFailure("invalid_response", f"level is not a number: {value['level']!r}")
        return RawAnswer(level=_number(value["level"]))
    raise TierFailure("invalid_response", "answer has none of p, probs, level")


class HttpTier:
    """POSTs the state and questions to ``url`` and reads probabilities back."""

    untrusted: frozenset[str] = frozenset()

    def __init__(
        self,
        url: str,
        *,
        timeout: float = DEFAULT_TIMEOUTS["http"],
        headers: Mapping[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.id = f"http:{url}"
        self.url = url
        self.timeout = timeout
        self._headers = dict(headers or {})
        self._transport = transport
        self._client: httpx.AsyncClient | None = None

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            # A classifier behind a redirect (a web framework adding the trailing slash, with a 307 that keeps the
            # POST) is still the classifier: the redirect is followed, not read as a reply that is not JSON.
            self._client = httpx.AsyncClient(
                timeout=self.timeout, headers=self._headers, transport=self._transport, follow_redirects=True
            )
        return self._client

    async def answer(self, gate: str, questions: Sequence[Question], state: Mapping[str, Any]) -> TierResult:
        """One POST for all ``questions``; raises :class:`TierFailure` with the kind of what went wrong."""
        body = {"gate": gate, "state": dict(state), "questions": [question_payload(q) for q in questions]}
        try:
            response = await self._http().post(
                self.url, content=json.dumps(body, default=str), headers={"content-type": "application/json"}
            )
        except httpx.TimeoutException as e:
            raise TierFailure("timeout", str(e) or type(e).__name__) from e
        except httpx.TransportError as e:
            raise TierFailure("unreachable", str(e) or type(e).__name__) from e
        except httpx.TooManyRedirects as e:
            raise TierFailure("bad_request", str(e) or type(e).__name__) from e
        if response.status_code >= 300:  # a redirect left over (no location to follow) is no answer either
            raise status_failure(response.status_code, response.text)
        try:
            # stdlib json on purpose: it reads NaN and Infinity, so the policy can reject them by name
            data = json.loads(response.content)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as e:
            raise TierFailure("invalid_response", f"body is not JSON: {response.text[:80]!r}") from e
        answers = data.get("answers") if isinstance(data, dict) else None
        if not isinstance(answers, dict):
            raise TierFailure("invalid_response", "body has no 'answers' object")
        asked = {q.name for q in questions}
        tokens = data.get("tokens", 0)
        # bounded as a provider's usage is: a count past any call's use (1e20) could not even be written to the ledger
        if tokens is not None and (_number(tokens) is None or not 0 <= tokens <= MAX_TOKEN_COUNT):
            raise TierFailure("invalid_response", f"tokens is not a count: {tokens!r:.40}")
        return TierResult(
            answers={name: parse_answer(value) for name, value in answers.items() if name in asked},
            tokens=int(tokens or 0),
        )

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
