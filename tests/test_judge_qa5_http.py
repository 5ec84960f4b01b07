"""The http tier behind a redirect: a web framework's added trailing slash (a 307 that keeps the POST) is
followed; a redirect that leads nowhere or in a loop is a bad request, not a reply that is not JSON."""

from __future__ import annotations

import pytest
from judge_http_server import judge_server

from hive.gates import DELIVER_QUESTIONS
from hive.judge.engine import Judge
from hive.judge.tiers.http import HttpTier

STATE = {"note": "writer.py drops the last batch", "kind": "finding", "from_bee": "bee-1", "focus": "the writer"}


async def test_a_307_is_followed_with_the_same_post() -> None:
    async with judge_server() as server:
        server.answers = {"useful": {"p": 0.9}}
        judge = Judge([HttpTier(server.url("/redirect/answers"), timeout=10)])
        try:
            verdict = await judge.ask("deliver", DELIVER_QUESTIONS, STATE)
        finally:
            await judge.aclose()
    assert verdict.reason is None and verdict.answers["useful"].zone == "yes" and verdict.tokens == 5
    assert [request["state"] for request in server.requests] == [STATE, STATE]  # the body went along


@pytest.mark.parametrize("path", ["/nowhere", "/loop"])
async def test_a_redirect_that_leads_nowhere_is_a_bad_request(path: str) -> None:
    async with judge_server() as server:
        judge = Judge([HttpTier(server.url(path), timeout=10)])
        try:
            verdict = await judge.ask("deliver", DELIVER_QUESTIONS, STATE)
        finally:
            await judge.aclose()
    assert verdict.reason == "error:bad_request" and verdict.answers["useful"].zone == "unsure"
