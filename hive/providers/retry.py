"""Retries for provider calls: exponential backoff with jitter, ``Retry-After``, a hard per-request timeout.

Retried: HTTP 408, 409, 429 and 5xx, timeouts, dropped or refused connections, and bodies that cannot be
decoded (a corrupt ``Content-Encoding``). Not retried: other 4xx (a bad key or a bad request stays bad), and a
body larger than :data:`MAX_RESPONSE_BYTES`, which is never read past that. A server that asks for a longer wait
than :attr:`RetryPolicy.max_retry_after` is not waited for: the call fails at once, saying how long it asked for.

The decisions (:func:`classify_status`, :func:`parse_retry_after`, :func:`next_delay`) are pure functions;
:func:`send_with_retry` is the only part that waits or does I/O.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import email.utils
import json
import random
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hive.providers.base import ErrorKind, ProviderError

if TYPE_CHECKING:
    import httpx

REDACTED = "[redacted]"
_KEY_LIKE = re.compile(r"\b(?:sk|key|api)[-_][A-Za-z0-9_\-*.]{6,}", re.IGNORECASE)
_BODY_LIMIT = 2000
MAX_RESPONSE_BYTES = 64 << 20
"""Bytes of one response body read at most (decoded). A chat completion is kilobytes, a few megabytes with
log probabilities; a broken or hostile server streaming without end must not take the bee's memory."""
_DETAIL_LIMIT = 200


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. The defaults suit a bee; the judge's ``llm:`` tier wants fewer, shorter attempts."""

    max_attempts: int = 4
    """Attempts in all, the first one included."""
    base_delay: float = 1.0
    """Backoff before the second attempt, in seconds; doubles after each failure (then jittered)."""
    max_delay: float = 30.0
    """Cap on one backoff wait."""
    max_retry_after: float = 60.0
    """A ``Retry-After`` longer than this is not waited for: the call fails at once."""
    timeout: float = 120.0
    """Hard limit on one attempt, in seconds (``ModelSettings.timeout`` overrides it per call)."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.timeout <= 0:
            raise ValueError("timeout must be positive")


def classify_status(status: int) -> tuple[ErrorKind, bool] | None:
    """``None`` for success, else the error kind and whether retrying may help."""
    if 200 <= status < 300:
        return None
    if status == 429:
        return "rate_limited", True
    if status in (408, 409):
        return ("timeout" if status == 408 else "server"), True
    if status >= 500:
        return "server", True
    if status in (401, 403):
        return "auth", False
    return "bad_request", False


def parse_retry_after(headers: Mapping[str, str], now: _dt.datetime | None = None) -> float | None:
    """Seconds the server asks to wait: ``retry-after-ms``, or ``Retry-After`` in seconds or an HTTP-date."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.UTC)
    return max(0.0, (when - (now or _dt.datetime.now(_dt.UTC))).total_seconds())


def backoff_delay(failures: int, policy: RetryPolicy, rng: random.Random) -> float:
    """Wait after the ``failures``-th failed attempt: exponential, capped, with "equal jitter".

    Half the exponential step is kept and the other half drawn at random, so clients that failed together
    spread out but none retries immediately.
    """
    step = min(policy.max_delay, policy.base_delay * 2 ** (failures - 1))
    return float(step / 2 + rng.uniform(0, step / 2))


def next_delay(
    failures: int, retry_after: float | None, policy: RetryPolicy, rng: random.Random
) -> float | None:
    """How long to wait before the next attempt, or ``None`` to give up now."""
    if failures >= policy.max_attempts:
        return None
    if retry_after is None:
        return backoff_delay(failures, policy, rng)
    if retry_after > policy.max_retry_after:
        return None
    # Never earlier than asked; a little later, so that clients told the same time do not return together.
    return retry_after * (1 + 0.1 * rng.random())


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` without the given secrets or anything shaped like an API key (even a masked one)."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _KEY_LIKE.sub(REDACTED, text)


def error_detail(body: str) -> str:
    """The human part of a provider's error body: ``error.message`` when it is JSON, else the start of it."""
    detail = body
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            detail = error["message"]
        elif isinstance(error, str):
            detail = error
        elif isinstance(parsed.get("message"), str):
            detail = parsed["message"]
        elif isinstance(parsed.get("detail"), str):  # FastAPI-based servers (vLLM, LiteLLM …)
            detail = parsed["detail"]
    detail = " ".join(detail.split())
    return detail[:_DETAIL_LIMIT] + ("…" if len(detail) > _DETAIL_LIMIT else "")


_STATUS_WORDS: dict[ErrorKind, str] = {
    "rate_limited": "rate limited",
    "server": "server error",
    "auth": "authentication failed",
    "bad_request": "request rejected",
    "timeout": "timed out",
}


class _TooLarge(Exception):
    """A response body past :data:`MAX_RESPONSE_BYTES`."""


async def read_capped(response: httpx.Response, limit: int = MAX_RESPONSE_BYTES) -> httpx.Response:
    """``response`` with its whole body read, at most ``limit`` bytes of it, then closed.

    ``response`` may be a streamed one (``client.send(request, stream=True)``), so that nothing past the limit
    is ever held in memory. The result is a new, fully read response with the same status and headers.
    """
    import httpx

    try:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            raise _TooLarge
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > limit:
                raise _TooLarge
    finally:
        await response.aclose()
    # The body is decoded already: the new response must not decode it again.
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in ("content-encoding", "content-length", "transfer-encoding")
    ]
    return httpx.Response(response.status_code, headers=headers, content=bytes(body), request=response.request)


async def send_with_retry(
    attempt: Callable[[], Awaitable[httpx.Response]],
    *,
    policy: RetryPolicy,
    label: str,
    timeout: float | None = None,  # noqa: ASYNC109 - a per-attempt limit, applied with asyncio.timeout
    secrets: Iterable[str] = (),
    rng: random.Random | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> httpx.Response:
    """Run ``attempt`` (one HTTP request) until it gives a 2xx response, under ``policy``.

    ``attempt`` should send with ``stream=True``, so that a body past ``max_bytes`` is never read whole.
    ``label`` (the model spec) starts every error message; ``secrets`` are scrubbed from messages and bodies.
    Raises :class:`ProviderError` when the call fails for good. Cancellation propagates at once.
    """
    import httpx

    rng = rng or random.Random()
    secrets = tuple(secrets)
    limit = timeout if timeout is not None else policy.timeout
    failures = 0
    while True:
        retry_after: float | None = None
        try:
            async with asyncio.timeout(limit):
                response = await read_capped(await attempt(), max_bytes)
                body = response.content.decode("utf-8", errors="replace")
        except (TimeoutError, httpx.TimeoutException):
            kind: ErrorKind = "timeout"
            retryable = True
            status: int | None = None
            body = ""
            problem = f"no answer within {limit:g} s"
        except _TooLarge:
            kind, retryable, status, body = "invalid_response", False, None, ""
            problem = f"the response is larger than {max_bytes} bytes"
        except httpx.DecodingError as exc:
            kind, retryable, status, body = "invalid_response", True, None, ""
            problem = f"the response body could not be decoded ({type(exc).__name__})"
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            kind, retryable, status, body = "unreachable", True, None, ""
            problem = f"connection failed ({type(exc).__name__})"
        except (httpx.RequestError, httpx.InvalidURL) as exc:  # a transport error, too many redirects, a bad URL
            kind, retryable, status, body = "unreachable", False, None, ""
            problem = f"request failed ({type(exc).__name__})"
        else:
            verdict = classify_status(response.status_code)
            if verdict is None:
                return response
            kind, retryable = verdict
            status = response.status_code
            retry_after = parse_retry_after(response.headers)
            problem = f"HTTP {status} ({_STATUS_WORDS[kind]}): {error_detail(body)}"
            if status in (404, 405):
                # Most often a base URL without (or with a doubled) /v1: the address shows which.
                problem = f"HTTP {status} ({_STATUS_WORDS[kind]}) from {_address(response.request.url)}: " \
                          f"{error_detail(body)}"
        failures += 1
        delay = next_delay(failures, retry_after, policy, rng) if retryable else None
        if delay is None:
            raise _give_up(
                label, kind, status, body, problem, failures, retry_after, policy, retryable, secrets
            )
        await asyncio.sleep(delay)


def _address(url: httpx.URL) -> str:
    """Where a request went, without credentials or query (either may carry a key)."""
    port = f":{url.port}" if url.port is not None else ""
    return f"{url.scheme}://{url.host}{port}{url.path}"


def _give_up(
    label: str,
    kind: ErrorKind,
    status: int | None,
    body: str,
    problem: str,
    failures: int,
    retry_after: float | None,
    policy: RetryPolicy,
    retryable: bool,
    secrets: tuple[str, ...],
) -> ProviderError:
    if retryable and failures < policy.max_attempts and retry_after is not None:
        how = (
            f"the server asks to wait {retry_after:g} s, longer than the {policy.max_retry_after:g} s allowed"
        )
    else:
        how = f"after {failures} attempt{'s' if failures > 1 else ''}"
    message = scrub(f"{label}: {problem} ({how})", secrets)
    return ProviderError(message, kind=kind, status=status, body=scrub(body[:_BODY_LIMIT], secrets) or None)
