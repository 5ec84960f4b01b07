"""Append-only JSON-lines files: one writer per file, any number of incremental readers.

Invariants:

- A writer appends whole lines with a single ``write(2)`` on an ``O_APPEND`` descriptor, so a line is
  never interleaved with another and a crash leaves at most one torn last line. The page cache survives
  the writer being killed; ``fsync`` is optional (``durable=True``) because a lost machine is out of scope.
- A writer that finds the file ending mid-line (an earlier writer died, or one of its own writes failed
  part-way) starts its next line with a newline: the fragment becomes one corrupt line that readers skip,
  and never swallows the complete line written after it.
- A reader remembers the byte offset just past the last complete line it parsed. A torn last line is
  left for the next read; a corrupt line in the middle is skipped with a warning naming its line number,
  never raised.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

import orjson
from pydantic import BaseModel, TypeAdapter, ValidationError

from hive.errors import StoreError

log = logging.getLogger("hive.store")

T = TypeVar("T")


def dumps(record: BaseModel) -> bytes:
    """One record as one JSON line (with the trailing newline). ``None`` fields are left out, except those the
    record's class names in ``always_written`` (a ledger row carries its ``reason`` even when it is null)."""
    keep: frozenset[str] = getattr(type(record), "always_written", frozenset())
    if not keep:
        return orjson.dumps(record.model_dump(mode="json", exclude_none=True)) + b"\n"
    full = record.model_dump(mode="json")
    return orjson.dumps({k: v for k, v in full.items() if v is not None or k in keep}) + b"\n"


class JsonlWriter:
    """Appends records to one file. Only one writer may own a file."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        self.path = path
        self._durable = durable
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise StoreError(f"cannot open {path} for appending: {e.strerror}") from e
        self.lines = 0
        self._torn = _ends_mid_line(path)
        """The file ends in a line fragment, so the next line must start with a newline."""

    def append(self, record: BaseModel) -> None:
        self.append_bytes(dumps(record))

    def append_bytes(self, line: bytes) -> None:
        """Append whole lines (each ending with a newline) as they are."""
        if self._fd is None:
            raise StoreError(f"{self.path} is closed")
        view = memoryview(b"\n" + line if self._torn else line)
        try:
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
                self._torn = bool(view)  # part of the line is on disk: if the rest fails, a fragment is left
            if self._durable:
                os.fsync(self._fd)
        except OSError as e:
            raise StoreError(f"cannot append to {self.path}: {e.strerror}") from e
        self.lines += 1

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _ends_mid_line(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            if f.seek(0, os.SEEK_END) == 0:
                return False
            f.seek(-1, os.SEEK_END)
            return f.read(1) != b"\n"
    except OSError:  # not readable or not seekable (a device): there is no tail to repair
        return False


def write_json_atomic(path: Path, record: BaseModel) -> None:
    """Replace ``path`` with ``record`` as indented JSON, atomically (write a sibling, then rename)."""
    data = record.model_dump(mode="json", exclude_none=True)
    write_bytes_atomic(path, orjson.dumps(data, option=orjson.OPT_INDENT_2))


def write_text_atomic(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` (UTF-8), atomically."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data``, atomically (write a sibling, then rename): a reader sees the old file or
    the new one, and a failed write (a full disk) leaves neither half a file nor the sibling behind."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except OSError as e:
        # The cleanup can fail for the same reason (a read-only file system): the write's error is the news.
        with contextlib.suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise StoreError(f"cannot write {path}: {e.strerror}") from e


class JsonlReader(Generic[T]):
    """Reads a JSON-lines file incrementally, from where it stopped last time.

    ``parse`` turns one decoded JSON value into a record; a pydantic ``TypeAdapter`` or model class works.
    The file need not exist yet.
    """

    def __init__(self, path: Path, parse: TypeAdapter[T] | type[T] | Callable[[Any], T]) -> None:
        self.path = path
        self.offset = 0
        self.line_no = 0
        self.warnings: list[str] = []
        if isinstance(parse, TypeAdapter):
            self._parse: Callable[[Any], T] = parse.validate_python
        elif isinstance(parse, type) and issubclass(parse, BaseModel):
            self._parse = cast("Callable[[Any], T]", parse.model_validate)
        else:
            self._parse = parse  # type: ignore[assignment]

    def read_new(self) -> list[T]:
        """Every complete record appended since the last call."""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return []
        except OSError as e:
            raise StoreError(f"cannot read {self.path}: {e.strerror}") from e
        end = chunk.rfind(b"\n")
        if end < 0:
            return []
        records: list[T] = []
        # Split on "\n" only: bytes.splitlines() also splits on a stray "\r" and would miscount lines.
        for raw in chunk[:end].split(b"\n"):
            self.line_no += 1
            if not raw.strip():
                continue
            try:
                records.append(self._parse(orjson.loads(raw)))
            except (orjson.JSONDecodeError, ValidationError, ValueError, TypeError) as e:
                message = f"{self.path}: line {self.line_no}: skipped a corrupt line ({_first_line(e)})"
                self.warnings.append(message)
                log.warning(message)
        self.offset += end + 1
        return records

    def __iter__(self) -> Iterator[T]:
        return iter(self.read_new())


def read_all(path: Path, parse: TypeAdapter[T] | type[T] | Callable[[Any], T]) -> tuple[list[T], list[str]]:
    """All complete records of a file and the warnings about corrupt lines."""
    reader = JsonlReader(path, parse)
    return reader.read_new(), reader.warnings


def _first_line(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return text[0][:120] if text else type(e).__name__
