"""The bee's side of the coordinator channel: JSON lines, bee messages out, coordinator messages in.

:class:`StdioChannel` is the real one (stdout/stdin of the bee process); :class:`MemoryChannel` is the
in-process double the tests drive. Both implement :class:`Channel`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import stat
from typing import BinaryIO, Protocol

import orjson
from pydantic import ValidationError

from hive.records import COORDINATOR_MESSAGE_ADAPTER, BeeMessage, CoordinatorMessage
from hive.store import dumps

log = logging.getLogger("hive.bee")

MAX_LINE = 16 * 1024 * 1024
"""A notes message carries verbatim note texts; allow big lines rather than choke on one."""


class ChannelClosed(Exception):
    """The coordinator is gone: its end of the channel is closed."""


class Channel(Protocol):
    def send(self, message: BeeMessage) -> None:
        """Send one message; raise :class:`ChannelClosed` when the coordinator is gone."""
        ...

    async def receive(self) -> CoordinatorMessage | None:
        """The next message from the coordinator, or ``None`` once its end is closed."""
        ...


def parse_line(line: bytes) -> CoordinatorMessage | None:
    """One line from the coordinator, or ``None`` (with a warning) when it is not a valid message."""
    try:
        return COORDINATOR_MESSAGE_ADAPTER.validate_python(orjson.loads(line))
    except (orjson.JSONDecodeError, ValidationError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        log.warning("ignored a malformed line from the coordinator: %s", first[:200])
        return None


class StdioChannel:
    """JSON lines over a pair of file descriptors (the process's stdin and its saved stdout).

    Writes are synchronous, whole lines in one ``write(2)``: messages stay in order and the bee's messages
    are small, so a blocking write to a live coordinator is brief.
    """

    def __init__(self, out_fd: int, in_fd: int = 0) -> None:
        self._out_fd = out_fd
        self._in_fd = in_fd
        self._reader: asyncio.StreamReader | None = None
        self._transport: asyncio.BaseTransport | None = None

    def send(self, message: BeeMessage) -> None:
        view = memoryview(dumps(message))
        try:
            while view:
                view = view[os.write(self._out_fd, view) :]
        except (BrokenPipeError, ConnectionResetError) as e:
            raise ChannelClosed("the coordinator closed the channel") from e

    async def _open(self) -> asyncio.StreamReader:
        reader = asyncio.StreamReader(limit=MAX_LINE)
        if stat.S_ISREG(os.fstat(self._in_fd).st_mode):
            # A regular file cannot be watched by the event loop; it is all there already, so read it now.
            reader.feed_data(_read_all(self._in_fd))
            reader.feed_eof()
        else:
            loop = asyncio.get_running_loop()
            self._transport, _ = await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), _pipe(self._in_fd)
            )
        return reader

    async def receive(self) -> CoordinatorMessage | None:
        if self._reader is None:
            self._reader = await self._open()
        while True:
            try:
                line = await self._reader.readline()
            except ValueError:  # a line longer than MAX_LINE: drop it, keep the channel
                log.warning("ignored an oversized line from the coordinator")
                continue
            if not line:
                return None
            if not line.strip():
                continue
            message = parse_line(line)
            if message is not None:
                return message

    def close(self) -> None:
        if self._transport is not None:
            self._transport.close()
            self._transport = None


def _read_all(fd: int) -> bytes:
    with open(fd, "rb", closefd=False) as f:
        return f.read()


def _pipe(fd: int) -> BinaryIO:
    """A file object for the read transport, which owns and closes it (the descriptor stays open)."""
    return open(fd, "rb", buffering=0, closefd=False)


class MemoryChannel:
    """An in-process channel for tests: ``sent`` collects the bee's messages, :meth:`push` feeds it.

    ``await channel.delivered()`` returns once the bee has taken and handled everything pushed so far,
    which lets a test make a note arrive at an exact point of the bee's work.
    """

    def __init__(self) -> None:
        self.sent: list[BeeMessage] = []
        self._queue: asyncio.Queue[CoordinatorMessage | None] = asyncio.Queue()
        self._taken = False

    def send(self, message: BeeMessage) -> None:
        self.sent.append(message)

    def push(self, message: CoordinatorMessage) -> None:
        self._queue.put_nowait(message)

    def close(self) -> None:
        """End of input, as when the coordinator closes the bee's stdin."""
        self._queue.put_nowait(None)

    async def delivered(self) -> None:
        await self._queue.join()

    async def receive(self) -> CoordinatorMessage | None:
        # The reader handles each message synchronously before asking for the next one, so asking
        # again means the previous message has been handled.
        if self._taken:
            self._queue.task_done()
        message = await self._queue.get()
        self._taken = message is not None
        if message is None:
            self._queue.task_done()
        return message
