"""Test doubles that implement hive's real protocols, for hive's tests and for yours.

- :class:`FunctionModel` answers with a function you write.
- :class:`ScriptedModel` answers from a queue and checks that the queue was used up.
- :class:`LocalHTTPServer` is a real HTTP server on 127.0.0.1 that plays canned responses and records the
  requests, for testing HTTP clients (model providers, judge tiers) without a network.

This module imports only the standard library and hive's protocol definitions.
"""

from __future__ import annotations

import inspect
import json
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hive.providers.base import Message, ModelResponse, ModelSettings, ToolSpec

if TYPE_CHECKING:
    from http.server import BaseHTTPRequestHandler

ModelFunction = Callable[
    [list[Message], list[ToolSpec], ModelSettings], "ModelResponse | str | Awaitable[ModelResponse | str]"
]


def _as_response(reply: ModelResponse | str, name: str) -> ModelResponse:
    return ModelResponse(text=reply, model=name) if isinstance(reply, str) else reply


class FunctionModel:
    """A :class:`~hive.providers.base.Model` whose replies come from ``fn(messages, tools, settings)``.

    ``fn`` may be sync or async and may return a :class:`ModelResponse` or just the reply text. It gets the
    messages as sent, the tool specs (an empty list when none) and the settings (defaults when none).
    """

    def __init__(self, fn: ModelFunction, *, name: str = "function") -> None:
        self.name = name
        self.fn = fn

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """Call the function and wrap its reply."""
        reply = self.fn(list(messages), list(tools or []), settings or ModelSettings())
        if inspect.isawaitable(reply):
            reply = await reply
        return _as_response(reply, self.name)

    async def aclose(self) -> None:
        """Nothing to release."""


class UnexpectedModelCall(AssertionError):
    """A :class:`ScriptedModel` was called after its responses ran out."""


@dataclass(frozen=True)
class ModelCall:
    """One call a :class:`ScriptedModel` received."""

    messages: list[Message]
    tools: list[ToolSpec]
    settings: ModelSettings


class ScriptedModel:
    """A :class:`~hive.providers.base.Model` that replies from a queue, in order.

    Each entry is a :class:`ModelResponse`, a string (the reply text) or an exception (raised on that call).
    Every call is recorded in :attr:`calls`; a call beyond the queue raises :class:`UnexpectedModelCall`.
    """

    def __init__(self, responses: Iterable[ModelResponse | str | BaseException], *, name: str = "scripted") -> None:
        self.name = name
        self._queue: deque[ModelResponse | str | BaseException] = deque(responses)
        self.calls: list[ModelCall] = []

    async def request(
        self,
        messages: list[Message],
        tools: list[ToolSpec] | None = None,
        settings: ModelSettings | None = None,
    ) -> ModelResponse:
        """The next queued reply."""
        self.calls.append(ModelCall(list(messages), list(tools or []), settings or ModelSettings()))
        if not self._queue:
            raise UnexpectedModelCall(f"{self.name}: call {len(self.calls)} but no responses left")
        reply = self._queue.popleft()
        if isinstance(reply, BaseException):
            raise reply
        return _as_response(reply, self.name)

    @property
    def remaining(self) -> int:
        """Responses not yet used."""
        return len(self._queue)

    def assert_complete(self) -> None:
        """Fail unless every queued response was used."""
        if self._queue:
            raise AssertionError(f"{self.name}: {len(self._queue)} response(s) never requested")

    async def aclose(self) -> None:
        """Nothing to release."""


@dataclass(frozen=True)
class CannedResponse:
    """What :class:`LocalHTTPServer` answers to one request."""

    status: int = 200
    body: Any = None
    """A ``str`` or ``bytes`` is sent as is; anything else as JSON."""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    """Seconds to wait before answering (to make a client time out)."""


@dataclass(frozen=True)
class RecordedRequest:
    """A request :class:`LocalHTTPServer` received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float
    """``time.monotonic()`` when the request arrived."""

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


class LocalHTTPServer:
    """A threaded HTTP server on ``127.0.0.1`` (a free port) that answers requests from a queue.

    Use as a context manager; :attr:`url` is its base URL. :meth:`reply` queues a response; requests beyond
    the queue get HTTP 500 with ``{"error": {"message": "no canned response"}}``. Every request is kept in
    :attr:`requests`, headers lower-cased.
    """

    def __init__(self) -> None:
        from http.server import ThreadingHTTPServer

        self._queue: deque[CannedResponse] = deque()
        self._lock = threading.Lock()
        self.requests: list[RecordedRequest] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._server.block_on_close = False
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def reply(
        self,
        body: Any = None,
        *,
        status: int = 200,
        headers: dict[str, str] | None = None,
        delay: float = 0.0,
    ) -> None:
        """Queue one response."""
        with self._lock:
            self._queue.append(CannedResponse(status, body, dict(headers or {}), delay))

    def _next(self, request: RecordedRequest) -> CannedResponse:
        with self._lock:
            self.requests.append(request)
            if self._queue:
                return self._queue.popleft()
        return CannedResponse(500, {"error": {"message": "no canned response"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        from http.server import BaseHTTPRequestHandler

        server = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                headers = {k.lower(): v for k, v in self.headers.items()}
                canned = server._next(RecordedRequest(self.command, self.path, headers, body, time.monotonic()))
                if canned.delay:
                    time.sleep(canned.delay)
                payload = canned.body
                if isinstance(payload, str):
                    data = payload.encode()
                elif isinstance(payload, bytes):
                    data = payload
                else:
                    data = json.dumps(payload).encode()
                try:
                    self.send_response(canned.status)
                    for name, value in canned.headers.items():
                        self.send_header(name, value)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting, which is what a delay is for

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return Handler

    def __enter__(self) -> LocalHTTPServer:
        # serve_forever notices shutdown() only between polls: poll often so that tests end quickly.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="LocalHTTPServer", daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join()
