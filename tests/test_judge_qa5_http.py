"""The http tier behind a redirect: a web framework's added trailing slash (a 307 that keeps the POST) is
followed; a redirect that leads nowhere or in a loop is a bad request, not a reply that is not JSON. And a
token count no call could use is an invalid response, not a row the ledger cannot write."""

from __future__ import annotations

import pytest
from judge_http_server import judge_server

from hive.gates import DELIVER_QUESTIONS, Gates
from hive.judge.engine import Judge
from hive.judge.tiers.http import HttpTier
from hive.records import Note
from hive.store import dumps

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


async def test_a_token_count_past_any_call_is_an_invalid_response_and_the_row_is_written() -> None:
    note = Note(id="n-1", bee="bee-1", kind="finding", text=STATE["note"], score=1.0)
    async with judge_server() as server:
        judge = Judge([HttpTier(server.url("/bigtokens"), timeout=10)])
        try:
            result = await Gates(judge, goal="find the lost rows").deliver(note, to_bee="bee-2", focus="the writer")
        finally:
            await judge.aclose()
    row = result.decision
    assert row is not None and (row.reason, row.tokens) == ("error:invalid_response", 0)
    assert b'"error:invalid_response"' in dumps(row)  # 1e20 tokens could not be written: orjson stops at 64 bits
