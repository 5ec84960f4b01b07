"""A real HTTP server on 127.0.0.1 for the judge tests: it answers, hangs, errs or sends garbage by path."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any


@dataclass
class JudgeServer:
    """``/answers`` replies ``{"answers": answers}``; ``/slow`` never replies; ``/status/<n>`` replies HTTP n;
    ``/garbage`` replies non-JSON; ``/nan`` replies a NaN probability; ``/shape`` replies JSON of the wrong
    shape; ``/tokens`` replies answers with an infinite token count, ``/bigtokens`` with one of 1e20; ``/deep``
    JSON nested too deeply; ``/redirect<path>`` a 307 to ``<path>``; ``/loop`` a 307 to itself; ``/nowhere`` a 307
    with no location. Every request body is kept in ``requests``."""

    port: int = 0
    answers: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    handlers: set[asyncio.Task[Any]] = field(default_factory=set)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.handlers.add(task)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode().split("\r\n")
            path = lines[0].split()[1]
            length = next(
                (int(line.split(":", 1)[1]) for line in lines if line.lower().startswith("content-length")), 0
            )
            self.requests.append(json.loads(await reader.readexactly(length)) if length else {})
            status, body, headers = 200, b"", ""
            if path.startswith("/redirect"):
                status, headers = 307, f"location: {path.removeprefix('/redirect')}\r\n"
            elif path == "/loop":
                status, headers = 307, "location: /loop\r\n"
            elif path == "/nowhere":
                status = 307
            elif path == "/answers":
                body = json.dumps({"answers": self.answers, "tokens": 5}).encode()
            elif path == "/slow":
                await asyncio.Event().wait()
            elif path.startswith("/status/"):
                status, body = int(path.rsplit("/", 1)[1]), b'{"error": "no"}'
            elif path == "/garbage":
                body = b"<html>surprise</html>"
            elif path == "/nan":
                body = b'{"answers": {"news": {"p": NaN}, "useful": {"p": NaN}}}'
            elif path == "/shape":
                body = b'{"answer": [1, 2, 3]}'
            elif path == "/deep":
                body = b"[" * 100_000
            elif path == "/bigtokens":
                body = b'{"answers": {"news": {"p": 0.9}, "useful": {"p": 0.9}}, "tokens": 1e20}'
            elif path == "/tokens":
                body = b'{"answers": {"news": {"p": 0.9}, "useful": {"p": 0.9}}, "tokens": Infinity}'
            writer.write(
                f"HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
                f"{headers}connection: close\r\n\r\n".encode()
                + body
            )
            await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.handlers.discard(task)
            writer.close()


@asynccontextmanager
async def judge_server() -> AsyncIterator[JudgeServer]:
    state = JudgeServer()
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    state.port = server.sockets[0].getsockname()[1]
    try:
        yield state
    finally:
        server.close()
        for task in list(state.handlers):  # handlers parked on /slow
            task.cancel()
        await asyncio.gather(*state.handlers, return_exceptions=True)
        await server.wait_closed()


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (connection refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
