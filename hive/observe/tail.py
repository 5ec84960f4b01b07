"""``hive tail``: the board in readable form, as it grows.

What is already on the board is printed first, each note with its final marks (recipients, superseded,
in dispute, confirmed). Then, while following, every new record is printed as it lands: a note with the
marks it has so far, and deliveries, relations, corrections, disputes and verifiers as lines of their own.

Following watches the run directory (not recursively: bees' transcripts are not our business) with
watchfiles, short debounce so a line shows within tens of milliseconds of being written; a periodic wake-up
notices a coordinator that died without saying so. Files are read with the store's incremental reader, so a
torn last line waits until it is complete and a corrupt one is skipped with a warning. Output is plain text.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import re
from collections.abc import Iterable, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TextIO, TypeVar

import orjson
from pydantic import TypeAdapter

from hive.board import BoardState
from hive.errors import RunNotFound, StoreError, UsageError
from hive.observe.reading import clock, direct_bees, printable, referenced_notes
from hive.records import (
    BOARD_ADAPTER,
    BoardRecord,
    Delivery,
    Dispute,
    GateDecision,
    Note,
    Relation,
    Resolution,
    RunInfo,
    Verifier,
)
from hive.runs import RunPaths, effective_status, holds_run_json, list_run_dirs, load_run_info, resolve_run
from hive.store import JsonlReader

log = logging.getLogger("hive.observe")

TailItem = BoardRecord | GateDecision
T = TypeVar("T")

WATCH_DEBOUNCE_MS = 50
"""Longest a burst of writes is grouped before it is shown."""
WATCH_STEP_MS = 10
"""How often the watcher checks whether a burst has ended: the floor of the display latency."""
LIVENESS_CHECK_MS = 500
"""Wake-up interval without file events, to notice a coordinator that died without updating run.json."""
FIRST_RUN_POLL_S = 0.1
"""How often ``hive tail`` looks for the first run when it was started before any."""
_WATCHED = frozenset({"board.jsonl", "gate.jsonl", "run.json"})
_VERIFIER_ID = re.compile(r"verify-\d+")


# --------------------------------------------------------------------------- pure: filtering and lines


@dataclass(frozen=True)
class TailFilter:
    """``--bee`` and ``--kind``: a record shows when a note it names passes both, or when it names a
    chosen bee itself (a delivery to it, a decision about it) and the kind filter allows it."""

    bees: frozenset[str] = frozenset()
    kinds: frozenset[str] = frozenset()

    def shows(self, record: TailItem, notes: dict[str, Note]) -> bool:
        if not self.bees and not self.kinds:
            return True
        named = [notes[n] for n in referenced_notes(record) if n in notes]
        if any(self._passes(n) for n in named):
            return True
        if not self.bees or not direct_bees(record) & self.bees:
            return False
        if not self.kinds:
            return True
        kind = record.kind if isinstance(record, GateDecision) else None
        return kind in self.kinds or any(n.kind in self.kinds for n in named)

    def _passes(self, note: Note) -> bool:
        return (not self.bees or note.bee in self.bees) and (not self.kinds or note.kind in self.kinds)


def check_bees(info: RunInfo, wanted: Iterable[str], on_board: Iterable[str], *, running: bool) -> None:
    """Refuse a ``--bee`` the run does not have, as ``hive audit`` does. A run still being planned lists no
    bee yet, and a running one may still spawn verifiers: what may yet come is accepted."""
    if not info.bees:
        return
    listed = [b.id for b in info.bees]
    known = listed + sorted(set(on_board) - set(listed))
    for bee in sorted(wanted):
        if bee not in known and not (running and _VERIFIER_ID.fullmatch(bee)):
            raise UsageError(f"no bee {bee!r} in run {info.id} (bees: {', '.join(known)})")


def merge_in_time(board: Sequence[BoardRecord], decisions: Sequence[GateDecision]) -> list[TailItem]:
    """Board records and gate decisions in one stream, each file's order kept, interleaved by ``at``. On a
    tie (same millisecond) the decision goes first: it is the cause of the record beside it."""
    return list(heapq.merge(decisions, board, key=lambda item: item.at))


@dataclass
class TailPrinter:
    """Turns records into lines, keeping the board's fold to mark notes. Pure apart from its own state."""

    filter: TailFilter = field(default_factory=TailFilter)
    as_json: bool = False
    state: BoardState = field(default_factory=BoardState)

    def backlog(self, items: Iterable[TailItem]) -> list[str]:
        """What was there before following started: folded first, so each note shows its final marks and
        its recipients instead of one line per plain delivery."""
        items = list(items)
        for item in items:
            if not isinstance(item, GateDecision):
                self.state.apply(item)
        return [line for item in items for line in self._lines(item, settled=True)]

    def stream(self, items: Iterable[TailItem]) -> list[str]:
        """New records, each as it lands."""
        lines: list[str] = []
        for item in items:
            if not isinstance(item, GateDecision):
                self.state.apply(item)
            lines += self._lines(item, settled=False)
        return lines

    def _lines(self, item: TailItem, *, settled: bool) -> list[str]:
        if not self.filter.shows(item, self.state.notes):
            return []
        if self.as_json:
            return [orjson.dumps(item.model_dump(mode="json", exclude_none=True)).decode()]
        if (
            settled
            and isinstance(item, Delivery)
            and item.how in ("judge", "rule")
            and item.note in self.state.notes
            and self.filter.shows(self.state.notes[item.note], self.state.notes)
        ):
            return []  # shown among the note's recipients
        # Escaped once more as a whole: besides note texts, a reason may quote what a judge tier answered.
        return [printable(line) for line in format_item(item, self.state)]


def format_item(item: TailItem, state: BoardState) -> list[str]:
    """One record as readable lines, given the board as folded so far."""
    t = clock(item.at)
    match item:
        case Note():
            return note_lines(item, state)
        case Relation():
            tail = ""
            if item.relation == "supersedes":
                tail = f": {item.earlier} no longer stands"
            elif item.relation == "contradicts" and not item.same_bee:
                tail = ": contested"
            same = ", same bee" if item.same_bee else ""
            return [f"{t} {item.later} {item.relation} {item.earlier} ({item.score:.2f}{same}){tail}"]
        case Delivery():
            if item.how == "correction":
                return [f"{t} correction -> {item.to}: {item.note} replaces {item.replaces}"]
            if item.how == "conflict":
                return [f"{t} conflict notice -> {item.to}: {item.note}, disputed with {item.replaces}"]
            author = state.notes[item.note].bee if item.note in state.notes else "?"
            return [f"{t} {item.note} ({author}) -> {item.to}, by {item.how}"]
        case Dispute():
            a, b = item.notes
            return [f"{t} dispute {item.id} opened: {a} ({_bee_of(a, state)}) vs {b} ({_bee_of(b, state)})"]
        case Resolution():
            return [f"{t} dispute {item.dispute} resolved: {item.superseded} superseded by {item.by}"]
        case Verifier():
            a, b = item.notes
            return [f"{t} verifier {item.bee} spawned on dispute {item.dispute}: {a} vs {b}"]
        case GateDecision():
            return [decision_line(item)]
    return []


def note_lines(note: Note, state: BoardState) -> list[str]:
    """``time bee kind score id -> recipients [marks]`` then the verbatim text, indented."""
    header = f"{clock(note.at)} {note.bee} {note.kind} {note.score:.2f} {note.id}"
    recipients = state.recipients.get(note.id)
    if recipients:
        header += f" -> {', '.join(recipients)}"
    if note.id in state.superseded:
        header += f" [superseded by {state.superseded[note.id]}: no longer stands]"
    if note.id in state.contested_ids():
        header += " [in dispute]"
    if state.confirmations(note.id):
        header += f" [confirmed by {', '.join(sorted(state.confirmed_by[note.id]))}]"
    return [header, *("    " + line for line in (printable(note.text).splitlines() or [""]))]


def decision_line(d: GateDecision) -> str:
    """One gate decision: gate, subject, outcome, and who decided it."""
    if d.gate == "publish":
        subject = d.utterance or d.bee or "?"
    elif d.gate == "relate":
        subject = f"{d.later} vs {d.earlier}"
    elif d.note and d.to:
        subject = f"{d.note} -> {d.to}"
    else:
        subject = d.note or d.dispute or d.bee or d.to or "?"
    outcome = d.outcome + (f" {d.kind}" if d.kind and d.gate == "publish" and d.outcome == "publish" else "")
    how: list[str] = [d.source]
    if d.reason:
        how.append(d.reason)
    if d.score is not None and d.source != "rule":
        how.append(f"p {d.score:.2f}")
    if d.latency_ms:
        how.append(f"{d.latency_ms:.0f} ms")
    return f"{clock(d.at)} gate {d.gate} {subject} => {outcome} ({', '.join(how)})"


def _bee_of(note_id: str, state: BoardState) -> str:
    note = state.notes.get(note_id)
    return note.bee if note else "?"


# --------------------------------------------------------------------------- I/O: reading and following


def tail_target(runs_dir: Path, ref: str | None) -> RunPaths:
    """A run to tail: as ``resolve_run`` finds it, or a run directory that has no ``run.json`` yet (empty,
    or holding only a run's own files), so that tail can start before the coordinator has written."""
    if ref:
        candidate = Path(ref)
        if candidate.is_dir() and holds_run_json(candidate) is False:
            try:  # hidden names: run.json being written atomically, through a temporary sibling
                entries = {p.name for p in candidate.iterdir() if not p.name.startswith(".")}
            except OSError as e:
                raise UsageError(f"cannot read {ref}: {e.strerror}") from e
            if entries <= _WATCHED | {"bees", "answer.md"}:
                return RunPaths(candidate)
            raise RunNotFound(f"{ref} is not a run directory (no run.json)")
    return resolve_run(runs_dir, ref)


async def wait_for_first_run(runs_dir: Path) -> RunPaths:
    """``hive tail`` started before ``hive start`` made any run: the first run to appear (its ``run.json``
    written). What its board holds by then is printed first, as for any run, so nothing is missed."""
    while True:  # polled: the runs directory itself may not exist yet, so there is nothing to watch
        if await asyncio.to_thread(list_run_dirs, runs_dir):
            return resolve_run(runs_dir, "latest")
        await asyncio.sleep(FIRST_RUN_POLL_S)


class RunWatch:
    """``run.json`` as tail reads it: whether the run is still live, and what is wrong with the file if it
    cannot be read. No ``run.json`` yet is a run being started: live. One that cannot be read (corrupt, a
    directory, no permission) cannot tell when the run ends: it is warned about once, and the run is taken
    as live, so that a follower keeps going (until Ctrl-C) instead of stopping on a guess."""

    def __init__(self, paths: RunPaths) -> None:
        self.paths = paths
        self.warned = False

    def read(self) -> tuple[RunInfo | None, str | None]:
        """The run's info (``None`` when not written yet, or unreadable) and the reason it is unreadable."""
        try:
            return load_run_info(self.paths), None
        except RunNotFound:  # not written yet (run.json appears atomically, so never half-written)
            return None, None
        except UsageError as e:
            return None, str(e)

    def live(self) -> bool:
        """True until run.json says the run ended, or names a coordinator that is gone, or the run directory
        itself is gone (deleted while followed: nothing more can land on its board)."""
        if not self.paths.dir.is_dir():
            log.warning(f"run directory {self.paths.dir} is gone")
            return False
        info, problem = self.read()
        if problem is not None:
            self.warn(problem)
        return info is None or effective_status(info) == "running"

    def warn(self, problem: str) -> None:
        if not self.warned:
            self.warned = True
            log.warning(f"{problem}: when the run ends cannot be told, so tail follows until Ctrl-C")


def end_line(paths: RunPaths) -> str:
    """How the run ended, for the last line of a followed tail."""
    try:
        info = load_run_info(paths)
    except UsageError:
        return f"-- run {paths.id} ended"
    reason = f" ({printable(info.exit_reason)})" if info.exit_reason else ""
    return f"-- run {info.id} {effective_status(info)}{reason}"


class FollowedFile(Generic[T]):
    """One JSONL file read incrementally, like ``tail -F``: the records are appended, never rewritten, but
    should the file shrink or be replaced (truncated by hand, rotated, copied over), it is read again from
    its start, with a warning, instead of waiting past its end for lines that will never come."""

    def __init__(self, path: Path, parse: TypeAdapter[T] | type[T]) -> None:
        self.path, self.parse = path, parse
        self.reader = JsonlReader(path, parse)
        self.identity: tuple[int, int] | None = None

    def read_new(self) -> list[T]:
        try:
            stat = self.path.stat()
        except OSError:  # not there (yet, or any more); a file that cannot be read is the reader's to report
            return self.reader.read_new()
        identity = (stat.st_dev, stat.st_ino)
        if stat.st_size < self.reader.offset or identity != (self.identity or identity):
            log.warning(f"{self.path} was truncated or replaced: reading it again from its start")
            self.reader = JsonlReader(self.path, self.parse)
        self.identity = identity
        return self.reader.read_new()


class _Source:
    """The run's board (and gate log) read incrementally."""

    def __init__(self, paths: RunPaths, *, gates: bool) -> None:
        self.board = FollowedFile(paths.board, BOARD_ADAPTER)
        self.gate = FollowedFile(paths.gate, GateDecision) if gates else None

    def read_new(self) -> list[TailItem]:
        try:
            board = self.board.read_new()
            decisions = self.gate.read_new() if self.gate is not None else []
        except StoreError as e:  # a board that is a directory, or unreadable: bad input, as for `hive show`
            raise UsageError(str(e)) from e
        return merge_in_time(board, decisions)


async def tail_run(
    paths: RunPaths,
    printer: TailPrinter,
    out: TextIO,
    *,
    follow: bool | None = None,
    gates: bool = False,
) -> None:
    """Print the run's board, then (``follow``; default: while the run is live) what lands on it, until
    the run ends. Returns normally at the end; cancellation (Ctrl-C) propagates."""
    source = _Source(paths, gates=gates)
    run = RunWatch(paths)

    def emit(lines: Sequence[str]) -> None:
        if lines:
            out.write("".join(line + "\n" for line in lines))
            out.flush()

    info, problem = await asyncio.to_thread(run.read)
    if problem is not None and follow is False:
        raise UsageError(problem)  # as `hive show` and `hive audit` do
    backlog = await asyncio.to_thread(source.read_new)
    if info is not None:
        authors = (r.bee for r in backlog if isinstance(r, Note))
        check_bees(info, printer.filter.bees, authors, running=effective_status(info) == "running")
    emit(printer.backlog(backlog))
    live = await asyncio.to_thread(run.live)
    if not live or follow is False:  # a run that has ended has nothing more to follow
        if follow and not printer.as_json:  # asked to follow one: say why it stops at once, not stop without a word
            emit([end_line(paths)])
        return

    from watchfiles import awatch

    watcher = awatch(
        paths.dir,
        watch_filter=lambda _change, path: Path(path).name in _WATCHED,
        debounce=WATCH_DEBOUNCE_MS,
        step=WATCH_STEP_MS,
        rust_timeout=LIVENESS_CHECK_MS,
        yield_on_timeout=True,
        recursive=False,
    )
    async with aclosing(watcher) as changes:
        # Lines written between the first read and the watcher starting are caught at the first wake-up.
        async for _ in changes:
            emit(printer.stream(await asyncio.to_thread(source.read_new)))
            if not await asyncio.to_thread(run.live):
                emit(printer.stream(await asyncio.to_thread(source.read_new)))
                break
    if not printer.as_json:
        emit([end_line(paths)])
