"""The retry policy's decisions, as pure functions, and send_with_retry against a real local server."""

from __future__ import annotations

import datetime as dt
import gzip
import random
import socket
from collections.abc import Iterator

import httpx
import pytest

from hive.providers.base import ProviderError
from hive.providers.retry import (
    MAX_RESPONSE_BYTES,
    REDACTED,
    RetryPolicy,
    backoff_delay,
    classify_status,
    error_detail,
    next_delay,
    parse_retry_after,
    scrub,
    send_with_retry,
)
from hive.testing import LocalHTTPServer

FAST = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.005, timeout=5)


@pytest.fixture
def api() -> Iterator[LocalHTTPServer]:
    with LocalHTTPServer() as server:
        yield server


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (200, None),
        (201, None),
        (429, ("rate_limited", True)),
        (500, ("server", True)),
        (503, ("server", True)),
        (529, ("server", True)),
        (408, ("timeout", True)),
        (409, ("server", True)),
        (401, ("auth", False)),
        (403, ("auth", False)),
        (400, ("bad_request", False)),
        (404, ("bad_request", False)),
        (422, ("bad_request", False)),
    ],
)
def test_classify_status(status: int, expected: tuple[str, bool] | None) -> None:
    assert classify_status(status) == expected


def test_retry_after_in_seconds_milliseconds_and_http_date() -> None:
    now = dt.datetime(2026, 11, 30, 3, 0, 0, tzinfo=dt.UTC)
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after": " 1.5 "}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Mon, 30 Nov 2026 03:00:12 GMT"}, now=now) == 12.0
    assert parse_retry_after({"retry-after": "Mon, 30 Nov 2026 02:00:00 GMT"}, now=now) == 0.0
    assert parse_retry_after({"retry-after": "-3"}) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    rng = random.Random(7)
    for failures, step in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0), (9, 8.0)]:
        delays = [backoff_delay(failures, policy, rng) for _ in range(200)]
        assert all(step / 2 <= d <= step for d in delays)
        assert len(set(delays)) > 100  # jittered, not a constant


def test_next_delay_honours_retry_after_and_gives_up() -> None:
    policy = RetryPolicy(max_attempts=3, base_delay=1.0, max_retry_after=60)
    rng = random.Random(1)
    assert 2.0 <= next_delay(1, 2.0, policy, rng) <= 2.2  # type: ignore[operator]
    assert next_delay(1, 0.0, policy, rng) == 0.0
    assert next_delay(1, 61.0, policy, rng) is None  # longer than we are willing to wait
    assert next_delay(3, None, policy, rng) is None  # attempts used up
    assert next_delay(3, 1.0, policy, rng) is None
    assert 0.5 <= next_delay(1, None, policy, rng) <= 1.0  # type: ignore[operator]


def test_policy_rejects_nonsense() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(timeout=0)


def test_scrub_removes_the_secret_and_key_shaped_text() -> None:
    text = "Incorrect API key provided: sk-proj-****abcd. Your key was s3cr3t-value."
    cleaned = scrub(text, ["s3cr3t-value"])
    assert "s3cr3t-value" not in cleaned
    assert "sk-proj" not in cleaned
    assert cleaned.count(REDACTED) == 2
    assert scrub("plain words stay", []) == "plain words stay"


def test_error_detail_reads_both_error_shapes() -> None:
    assert error_detail('{"error": {"message": "Rate limit reached", "type": "x"}}') == "Rate limit reached"
    assert error_detail('{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}') == (
        "Overloaded"
    )
    assert error_detail('{"error": "model not found"}') == "model not found"
    assert error_detail("<html>\n  Bad   Gateway\n</html>") == "<html> Bad Gateway </html>"
    assert len(error_detail("x" * 1000)) == 201


async def _send(api: LocalHTTPServer, policy: RetryPolicy = FAST, **kwargs: object) -> httpx.Response:
    async with httpx.AsyncClient(base_url=api.url) as client:
        return await send_with_retry(
            lambda: client.post("/x", json={}),
            policy=policy,
            label="test:model",
            **kwargs,  # type: ignore[arg-type]
        )


async def test_retries_5xx_then_succeeds(api: LocalHTTPServer) -> None:
    api.reply({"error": {"message": "boom"}}, status=500)
    api.reply({"error": {"message": "overloaded"}}, status=503)
    api.reply({"ok": True})
    response = await _send(api)
    assert response.json() == {"ok": True}
    assert len(api.requests) == 3


async def test_honours_retry_after_before_retrying(api: LocalHTTPServer) -> None:
    api.reply({"error": {"message": "slow down"}}, status=429, headers={"Retry-After": "0.3"})
    api.reply({"ok": True})
    response = await _send(api)
    assert response.status_code == 200
    first, second = api.requests
    # Without the header the policy would wait about a millisecond.
    assert second.received_at - first.received_at >= 0.3


async def test_retry_after_longer_than_allowed_fails_at_once(api: LocalHTTPServer) -> None:
    api.reply({"error": {"message": "quota"}}, status=429, headers={"Retry-After": "3600"})
    with pytest.raises(ProviderError) as caught:
        await _send(api, RetryPolicy(max_attempts=5, base_delay=0.001, max_retry_after=1))
    assert caught.value.kind == "rate_limited"
    assert caught.value.status == 429
    assert "asks to wait 3600 s" in str(caught.value)
    assert len(api.requests) == 1


async def test_gives_up_after_max_attempts(api: LocalHTTPServer) -> None:
    for _ in range(3):
        api.reply({"error": {"message": "still down"}}, status=502)
    with pytest.raises(ProviderError) as caught:
        await _send(api)
    error = caught.value
    assert (error.kind, error.status) == ("server", 502)
    assert str(error) == "test:model: HTTP 502 (server error): still down (after 3 attempts)"
    assert error.body is not None and "still down" in error.body
    assert len(api.requests) == 3


async def test_does_not_retry_a_bad_request(api: LocalHTTPServer) -> None:
    api.reply({"error": {"message": "unknown parameter"}}, status=400)
    with pytest.raises(ProviderError) as caught:
        await _send(api)
    assert caught.value.kind == "bad_request"
    assert "after 1 attempt)" in str(caught.value)
    assert len(api.requests) == 1


async def test_a_404_names_the_address_asked_without_credentials_or_query(api: LocalHTTPServer) -> None:
    """A base URL without its /v1 gives `{"detail": "Not Found"}`: the address shows what went wrong."""
    api.reply({"detail": "Not Found"}, status=404)
    host = api.url.removeprefix("http://")
    with pytest.raises(ProviderError) as caught:
        async with httpx.AsyncClient(base_url=f"http://user:pw@{host}") as client:
            await send_with_retry(lambda: client.post("/chat/completions?key=k1", json={}), policy=FAST,
                                  label="test:model")
    assert str(caught.value) == (
        f"test:model: HTTP 404 (request rejected) from {api.url}/chat/completions: Not Found (after 1 attempt)"
    )


async def test_timeout_then_success(api: LocalHTTPServer) -> None:
    api.reply({"late": True}, delay=2)
    api.reply({"ok": True})
    response = await _send(api, timeout=0.2)
    assert response.json() == {"ok": True}
    assert len(api.requests) == 2


async def test_timeouts_until_give_up(api: LocalHTTPServer) -> None:
    for _ in range(2):
        api.reply({"late": True}, delay=2)
    with pytest.raises(ProviderError) as caught:
        await _send(api, RetryPolicy(max_attempts=2, base_delay=0.001, timeout=0.2))
    assert caught.value.kind == "timeout"
    assert caught.value.status is None
    assert "no answer within 0.2 s" in str(caught.value)


async def test_refused_connection_is_unreachable() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as client:
        with pytest.raises(ProviderError) as caught:
            await send_with_retry(lambda: client.post("/x"), policy=FAST, label="test:model")
    assert caught.value.kind == "unreachable"
    assert "after 3 attempts" in str(caught.value)


async def test_secrets_never_reach_the_error(api: LocalHTTPServer) -> None:
    key = "hk-live-0123456789abcdef"
    api.reply({"error": {"message": f"Invalid key {key}"}}, status=401)
    with pytest.raises(ProviderError) as caught:
        await _send(api, secrets=[key])
    assert key not in str(caught.value)
    assert caught.value.body is not None and key not in caught.value.body
    assert caught.value.kind == "auth"


async def test_a_body_that_cannot_be_decoded_is_retried_not_raised_raw(api: LocalHTTPServer) -> None:
    api.reply(b"not gzip at all", headers={"content-encoding": "gzip"})
    api.reply({"ok": True})
    response = await _send(api)
    assert response.json() == {"ok": True}
    assert len(api.requests) == 2

    for _ in range(3):
        api.reply(b"not gzip at all", headers={"content-encoding": "gzip"})
    with pytest.raises(ProviderError) as caught:
        await _send(api)
    assert caught.value.kind == "invalid_response"
    assert "could not be decoded" in str(caught.value)


async def test_a_body_past_the_cap_fails_without_retrying(api: LocalHTTPServer) -> None:
    api.reply({"text": "x" * 5000})
    with pytest.raises(ProviderError) as caught:
        await _send(api, max_bytes=1000)
    assert caught.value.kind == "invalid_response"
    assert str(caught.value) == "test:model: the response is larger than 1000 bytes (after 1 attempt)"
    assert len(api.requests) == 1


async def test_a_compressed_body_is_capped_as_it_is_decoded(api: LocalHTTPServer) -> None:
    # A few kilobytes on the wire, 64 MiB and more once decoded: the cap counts what would be held in memory.
    bomb = gzip.compress(b" " * (MAX_RESPONSE_BYTES + 1), compresslevel=9)
    assert len(bomb) < MAX_RESPONSE_BYTES // 100
    api.reply(bomb, headers={"content-encoding": "gzip"})
    with pytest.raises(ProviderError) as caught:
        await _send(api)
    assert caught.value.kind == "invalid_response"
    assert f"larger than {MAX_RESPONSE_BYTES} bytes" in str(caught.value)


async def test_a_streamed_response_is_read_whole_and_closed(api: LocalHTTPServer) -> None:
    api.reply(gzip.compress(b'{"ok": true}'), headers={"content-encoding": "gzip", "x-request-id": "r1"})
    async with httpx.AsyncClient(base_url=api.url) as client:
        response = await send_with_retry(
            lambda: client.send(client.build_request("POST", "/x", json={}), stream=True), policy=FAST, label="t"
        )
    assert (response.status_code, response.json(), response.headers["x-request-id"]) == (200, {"ok": True}, "r1")


async def test_a_request_httpx_cannot_even_build_is_a_provider_error() -> None:
    async with httpx.AsyncClient() as client:
        with pytest.raises(ProviderError) as caught:
            await send_with_retry(
                lambda: client.send(client.build_request("POST", "http://exa\tmple.com/"), stream=True),
                policy=FAST,
                label="test:model",
            )
    assert str(caught.value) == "test:model: request failed (InvalidURL) (after 1 attempt)"
    assert caught.value.kind == "unreachable"
