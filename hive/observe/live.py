"""The live view of ``hive start``: what the hive is doing while it runs.

Three modes, chosen by the caller: ``rich`` (a terminal: a redrawn panel, at most every 200 ms, never wider
than the terminal), ``plain`` (a pipe or ``--plain``: one timestamped line per event, no control codes) and
``quiet`` (nothing; the coordinator prints only the answer).

State is a pure fold (:meth:`LiveState.apply`) of the coordinator's events: every bee message, board record
and gate decision, plus the coordinator's own ``bee started`` / ``bee finished`` / ``message`` events.
Drawing is a pure function of that state, a width and the time (:func:`render`, :func:`panel_lines`), so
tests draw to a fixed-width console. rich is imported only when a rich view is opened or drawn.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import sys
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import IO, TYPE_CHECKING, Literal, TextIO

import orjson
from pydantic import TypeAdapter, ValidationError

from hive.board import BoardState
from hive.observe.reading import asked_the_judge, clock, dollars, printable
from hive.observe.stdout import discard_stdout
from hive.records import (
    BOARD_ADAPTER,
    Activity,
    BeeInfo,
    Delivery,
    Dispute,
    GateDecision,
    Note,
    Ready,
    Received,
    Relation,
    Report,
    Resolution,
    RunInfo,
    Usage,
    Utterance,
    Verifier,
    now_iso,
    parse_iso,
)
from hive.runs import RunPaths
from hive.wording import plural

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.live import Live

log = logging.getLogger("hive.observe")

ViewMode = Literal["rich", "plain", "quiet"]
SILENCE_S = 40.0
"""A working bee silent this long is shown as "no sign of life"."""
REFRESHES_PER_SECOND = 5
"""The panel is redrawn at most this often (every 200 ms), however many events arrive."""
LATEST_NOTES = 5
MODEL_CELLS = 28
"""A model spec longer than this is shown cut in the middle (its provider and file name stay)."""
_DONE_OUTCOMES = frozenset({"reported", "cut_short"})


@dataclass(frozen=True)
class BeeStarted:
    """The coordinator started a bee process."""

    bee: BeeInfo
    at: str = field(default_factory=now_iso)


@dataclass(frozen=True)
class BeeFinished:
    """A bee has its outcome (it reported, was cut short, failed or crashed)."""

    bee: str
    outcome: str
    reason: str | None = None
    at: str = field(default_factory=now_iso)


@dataclass(frozen=True)
class Said:
    """A line from the coordinator itself, e.g. "planning angles…"."""

    text: str
    at: str = field(default_factory=now_iso)


@dataclass(frozen=True)
class Spent:
    """What one of the coordinator's own model calls cost (planning the angles, writing the answer)."""

    tokens: int
    cost_usd: float | None = None
    at: str = field(default_factory=now_iso)


LiveEvent = (
    Ready | Utterance | Activity | Usage | Received | Report
    | Note | Relation | Dispute | Resolution | Delivery | Verifier
    | GateDecision | BeeStarted | BeeFinished | Said | Spent
)


# --------------------------------------------------------------------------- the fold


@dataclass
class BeeRow:
    id: str
    role: str = ""
    model: str = ""
    state: Literal["starting", "working", "done", "failed"] = "starting"
    outcome: str | None = None
    reason: str | None = None
    step: int = 0
    tool_calls: int = 0
    notes_out: int = 0
    notes_in: int = 0
    activity: str = ""
    last_seen: dt.datetime | None = None
    tokens: int = 0
    cost_usd: float | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")


@dataclass
class LiveState:
    """Everything the live view shows, folded from events. Pure: time comes in with each event."""

    run: str
    problem: str
    started_at: dt.datetime
    bees: dict[str, BeeRow] = field(default_factory=dict)
    board: BoardState = field(default_factory=BoardState)
    deliveries: int = 0
    """Notes handed to a bee, by the judge or by rule: what ``hive audit`` counts as delivered."""
    conflict_notices: int = 0
    corrections: int = 0
    decisions: int = 0
    judge_decisions: int = 0
    """Decisions that asked the judge (everything but rules)."""
    withheld: int = 0
    """Utterances the publish gate kept off the board (withheld or dropped as duplicates)."""
    tokens: int = 0
    cost_usd: float | None = None
    unpriced_tokens: int = 0
    """Tokens of calls without a known price, which ``cost_usd`` leaves out."""
    message: str = ""

    @classmethod
    def from_info(cls, info: RunInfo, earlier: Iterable[LiveEvent] = ()) -> LiveState:
        """The state of a run as ``run.json`` tells it (a resumed run's bees may have ended, and spent tokens,
        before this view opened), with what its files already held (``earlier``) folded in."""
        from hive.observe.audit import usage_from_bee_info

        state = cls(run=info.id, problem=info.problem, started_at=_parse(info.started_at))
        for bee in info.bees:
            row = state.bees[bee.id] = BeeRow(bee.id, bee.role, bee.model or info.model)
            if bee.outcome is not None:
                state._finish(bee.id, bee.outcome, bee.reason)
            used = usage_from_bee_info(bee)
            if used is not None:
                row.tokens, row.cost_usd = used.tokens, used.cost_usd
                state._spend(used.tokens, used.cost_usd)
        if info.coordinator is not None:
            own = info.coordinator
            state._spend(own.input_tokens + own.output_tokens, own.cost_usd)
        for event in earlier:
            state.apply(event)
        return state

    def apply(self, event: LiveEvent, received: dt.datetime | None = None) -> None:
        """Fold one event in. ``received`` (default: the event's ``at``) dates a bee's last sign of life."""
        when = received or _parse(event.at)
        match event:
            case BeeStarted():
                row = self._bee(event.bee.id)
                row.role, row.model = event.bee.role, event.bee.model or row.model
                row.state, row.last_seen = "working", when
                row.outcome = row.reason = None  # a resumed run starts a bee again: how it ended is history
            case BeeFinished():
                self._finish(event.bee, event.outcome, event.reason)
            case Said():
                self.message = event.text
            case Spent():
                self._spend(event.tokens, event.cost_usd)
            case Ready() | Utterance() | Received():
                self._seen(event.bee, when)
            case Activity():
                row = self._seen(event.bee, when)
                row.step = max(row.step, event.step)
                row.tool_calls += event.tool is not None  # not a bee's note that it elided old tool results
                row.activity = event.text
            case Usage():
                row = self._seen(event.bee, when)
                used = event.input_tokens + event.output_tokens
                row.tokens += used
                if event.cost_usd is not None:
                    row.cost_usd = (row.cost_usd or 0.0) + event.cost_usd
                self._spend(used, event.cost_usd)
            case Report():
                self._seen(event.bee, when)
                self._finish(event.bee, event.outcome, event.reason)
            case GateDecision():
                self.decisions += 1
                self.judge_decisions += asked_the_judge(event)
                self._spend(event.tokens, event.cost_usd)  # an llm: or http: judge's
                self.withheld += is_withheld(event)
            case Note():
                self.board.apply(event)
                self._bee(event.bee).notes_out += 1
            case Delivery():
                self.board.apply(event)
                self.deliveries += event.how in ("judge", "rule")
                self.corrections += event.how == "correction"
                self.conflict_notices += event.how == "conflict"
                self._bee(event.to).notes_in += 1
            case Relation() | Dispute() | Resolution() | Verifier():
                self.board.apply(event)

    def _bee(self, bee: str) -> BeeRow:
        return self.bees.setdefault(bee, BeeRow(bee))

    def _spend(self, tokens: int, cost_usd: float | None) -> None:
        self.tokens += tokens
        if cost_usd is None:
            self.unpriced_tokens += tokens
        else:
            self.cost_usd = (self.cost_usd or 0.0) + cost_usd

    def _seen(self, bee: str, when: dt.datetime) -> BeeRow:
        row = self._bee(bee)
        row.last_seen = when
        if row.state == "starting":
            row.state = "working"
        return row

    def _finish(self, bee: str, outcome: str, reason: str | None) -> None:
        row = self._bee(bee)
        row.outcome, row.reason = outcome, reason
        row.state = "done" if outcome in _DONE_OUTCOMES else "failed"

    # ------------------------------------------------------------------ views

    def counts(self) -> dict[str, int]:
        """Bees working, done and failed."""
        states = [row.state for row in self.bees.values()]
        return {
            "working": sum(s in ("starting", "working") for s in states),
            "done": states.count("done"),
            "failed": states.count("failed"),
        }


def recorded_events(paths: RunPaths) -> list[LiveEvent]:
    """What a run's gate log and board already hold: the part of a resumed run that came before this view.
    A line that cannot be read is left out without a word (the coordinator, reading the same files to resume
    the run, warns about it)."""
    events: list[LiveEvent] = []
    for path, adapter in ((paths.gate, _GATE_ADAPTER), (paths.board, BOARD_ADAPTER)):
        try:
            lines = path.read_bytes().split(b"\n")[:-1]  # the last piece is empty, or a torn line
        except OSError:
            continue
        for line in lines:
            try:
                events.append(adapter.validate_python(orjson.loads(line)))
            except (orjson.JSONDecodeError, ValidationError, ValueError, TypeError):
                continue
    return events


_GATE_ADAPTER: TypeAdapter[GateDecision] = TypeAdapter(GateDecision)


def _parse(at: str) -> dt.datetime:
    try:
        return parse_iso(at)
    except ValueError:
        return dt.datetime.now(dt.UTC)


# --------------------------------------------------------------------------- drawing (pure)


def panel_lines(state: LiveState, width: int, now: dt.datetime) -> list[tuple[str, str]]:
    """The panel as ``(text, style)`` lines, each at most ``width`` cells (longer text ends in "…")."""
    width = max(width, 10)
    counts = state.counts()
    head = [
        f"⬢ hive {state.run}",
        _elapsed((now - state.started_at).total_seconds()),
        f"{plural(len(state.bees), 'bee')}: {counts['working']} working, {counts['done']} done, "
        f"{counts['failed']} failed",
    ]
    disputes = len(state.board.disputes)
    open_disputes = len(state.board.open_disputes())
    board = [
        f"board {plural(len(state.board.notes), 'note')}",
        f"{state.withheld} withheld",
        f"{state.deliveries} {'delivery' if state.deliveries == 1 else 'deliveries'}",
        plural(state.corrections, "correction"),
        *([plural(state.conflict_notices, "conflict notice")] if state.conflict_notices else []),
        f"{plural(disputes, 'dispute')} ({open_disputes} open)" if disputes else "0 disputes",
        plural(state.judge_decisions, "judge decision"),
        f"{_tokens(state.tokens)} tokens",
    ]
    # No price known for any call so far (a local or scripted model, or one missing from the price table).
    if state.cost_usd is None:
        board.append("cost unknown")
    else:  # a priced call beside unpriced ones: the cost is only part of the bill, and says so
        unpriced = f" + {_tokens(state.unpriced_tokens)} tokens unpriced" if state.unpriced_tokens else ""
        board.append(dollars(state.cost_usd) + unpriced)
    lines: list[tuple[str, str]] = [(line, "bold") for line in _flow(head, width, " · ")]
    lines += [(line, "") for line in _flow(board, width, " · ")]
    if state.message:
        lines.append((_fit(f"› {_one_line(state.message)}", width), "italic"))
    lines.append(("", ""))
    id_width = max((len(b) for b in state.bees), default=0)
    for row in state.bees.values():
        parts = [
            row.id.ljust(id_width),
            row.state if not row.outcome else row.outcome.replace("_", " "),
            row.role or "-",
            _squeeze(row.model or "-", MODEL_CELLS),
            f"step {row.step}",
            plural(row.tool_calls, "tool call"),
            f"notes {row.notes_out} out / {row.notes_in} in",
        ]
        if row.tokens:
            parts.append(f"{_tokens(row.tokens)} tokens")
        style = "red" if row.state == "failed" else "dim" if row.finished else ""
        lines += [(line, style) for line in _flow(parts, width, "  ", indent=" " * (id_width + 2))]
        activity = _activity(row, now)
        if activity:
            lines.append((_fit(f"  ↳ {_one_line(activity)}", width), "dim" if row.finished else "cyan"))
    notes = list(state.board.notes.values())[-LATEST_NOTES:]
    if notes:
        lines += [("", ""), ("latest notes", "bold")]
        contested = state.board.contested_ids()
        for note in notes:
            to = ", ".join(state.board.recipients.get(note.id, [])) or "-"
            mark = ""
            if note.id in state.board.superseded:
                mark = " (no longer stands)"
            elif note.id in contested:
                mark = " (in dispute)"
            line = f"  {note.bee} → {to}  {note.kind} {note.score:.2f}{mark}  {_one_line(note.text)}"
            lines.append((_fit(line, width), ""))
    return lines


def render(state: LiveState, width: int, now: dt.datetime) -> RenderableType:
    """The panel as a rich renderable, never wider than ``width``."""
    from rich.console import Group
    from rich.text import Text

    return Group(*(Text(text, style=style, no_wrap=True, overflow="ellipsis") for text, style in
                   panel_lines(state, width, now)))


def _activity(row: BeeRow, now: dt.datetime) -> str:
    if row.finished:
        return f"{row.reason}" if row.reason else ""
    if row.last_seen is not None:
        silent = (now - row.last_seen).total_seconds()
        if silent >= SILENCE_S:
            return f"no sign of life for {silent:.0f} s"
    return row.activity or ("starting" if row.state == "starting" else "")


def _flow(parts: Sequence[str], width: int, sep: str, indent: str = "") -> list[str]:
    """Pack parts into lines of at most ``width`` cells, continuation lines indented; a part too long for a
    line of its own is cut."""
    lines: list[str] = []
    current = ""
    for part in parts:
        candidate = f"{current}{sep}{part}" if current else part
        if _cells(candidate) <= width:
            current = candidate
            continue
        if current:
            lines.append(current)
        current = _fit((indent if lines else "") + part, width)
    if current:
        lines.append(current)
    return lines


def _squeeze(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    head = (width - 1) // 3
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


def _fit(text: str, width: int) -> str:
    """``text`` cut to ``width`` terminal cells, ending in "…" when cut."""
    if _cells(text) <= width:
        return text
    used = 0
    for i, char in enumerate(text):
        used += _cells(char)
        if used > width - 1:
            return text[:i] + "…"
    return text


def _cells(text: str) -> int:
    # Wide (East Asian, most emoji) characters take two cells; counting anything else as one errs long.
    return sum(2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in text)


def _elapsed(seconds: float) -> str:
    seconds = max(0, int(seconds))
    minutes, secs = divmod(seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _tokens(value: int) -> str:
    return f"{value / 1000:.1f}k" if value >= 10_000 else str(value)


# --------------------------------------------------------------------------- plain lines (pure)


def plain_lines(event: LiveEvent, state: LiveState) -> list[str]:
    """One event as timestamped plain lines (after it was folded into ``state``). Chatty events (utterances,
    usage, gate decisions) print nothing: their consequences do, and so does an utterance kept off the board."""
    t = clock(event.at)
    match event:
        case Said():
            return [f"{t} {_one_line(event.text)}"]
        case BeeStarted():
            bee = event.bee
            return [f"{t} {bee.id} started ({bee.role}, {bee.model or '-'}): {_one_line(bee.angle, 160)}"]
        case BeeFinished() | Report():
            reason = f" ({_one_line(event.reason)})" if event.reason else ""
            return [f"{t} {event.bee} finished: {event.outcome.replace('_', ' ')}{reason}"]
        case Activity():  # written by rule, but it quotes the model: the command it ran, the pattern it sought
            return [f"{t} {event.bee} {_one_line(event.text)}"]
        case Note():
            head = f"{t} note {event.id} {event.bee} {event.kind} {event.score:.2f}"
            return [f"{head}: {_one_line(event.text, 300)}"]
        case Delivery():
            if event.how == "correction":
                return [f"{t} correction -> {event.to}: {event.note} replaces {event.replaces}"]
            if event.how == "conflict":
                return [f"{t} conflict notice -> {event.to}: {event.note}, disputed with {event.replaces}"]
            return [f"{t} delivered {event.note} -> {event.to} ({event.how})"]
        case Relation():
            return [f"{t} {event.later} {event.relation} {event.earlier} ({event.score:.2f})"]
        case Dispute():
            return [f"{t} dispute {event.id} opened: {event.notes[0]} vs {event.notes[1]}"]
        case Resolution():
            return [f"{t} dispute {event.dispute} resolved: {event.superseded} superseded by {event.by}"]
        case Verifier():
            return [f"{t} verifier {event.bee} spawned on dispute {event.dispute}"]
        case GateDecision() if is_withheld(event):
            why = event.reason if event.outcome == "duplicate" else (
                "judge" if event.source == "judge" else f"fallback, {event.reason or event.source}")
            return [f"{t} withheld {event.utterance or event.bee} ({why}): {_one_line(event.text or '', 160)}"]
    return []


def is_withheld(decision: GateDecision) -> bool:
    """A publish decision that kept an utterance off the board (its text stays in ``gate.jsonl``)."""
    return decision.gate == "publish" and decision.outcome in ("withhold", "duplicate")


def _one_line(text: str, width: int | None = None) -> str:
    """``text`` on one line, control characters escaped (a model wrote it, or quoted it), cut to ``width``."""
    text = " ".join(printable(text).split())
    return text if width is None or len(text) <= width else text[: width - 1] + "…"


# --------------------------------------------------------------------------- the view (I/O)


class LiveView:
    """Receives the coordinator's events and shows them in one of the three modes. Use as a context manager
    or call :meth:`close`; every method is cheap and safe to call from the event loop."""

    def __init__(
        self,
        mode: ViewMode,
        info: RunInfo,
        *,
        console: Console | None = None,
        stream: TextIO | None = None,
        run_dir: RunPaths | None = None,
    ) -> None:
        self.mode = mode
        self.state = LiveState.from_info(info, recorded_events(run_dir) if run_dir is not None else ())
        self._lock = threading.Lock()  # the rich refresh thread draws while the loop folds
        self._stream: IO[str] | None = stream
        self._announced: set[str] = set()
        self._output_lost = False
        self._live: Live | None = None
        if mode == "rich":
            from rich.console import Console
            from rich.live import Live

            self._console = console or Console()
            if self._console.is_dumb_terminal or not self._console.is_terminal:
                # A terminal that cannot move its cursor (TERM=dumb) would show nothing until the last
                # frame: the events as lines instead.
                self.mode, self._stream = "plain", stream or self._console.file
                return
            self._live = Live(
                get_renderable=self._draw,
                console=self._console,
                refresh_per_second=REFRESHES_PER_SECOND,
                transient=False,
            )
            self._live.start()

    def on_event(self, event: LiveEvent) -> None:
        """Fold one bee message, board record or gate decision into the view."""
        with self._lock:
            self.state.apply(event, dt.datetime.now(dt.UTC))
            if self.mode == "plain":
                self._print(self._plain(event))

    def bee_started(self, bee: BeeInfo) -> None:
        self.on_event(BeeStarted(bee))

    def bee_finished(self, bee_id: str, outcome: str, reason: str | None) -> None:
        self.on_event(BeeFinished(bee_id, outcome, reason))

    def spent(self, tokens: int, cost_usd: float | None) -> None:
        self.on_event(Spent(tokens, cost_usd))

    def message(self, text: str) -> None:
        """A line from the coordinator, such as "planning angles…"."""
        self.on_event(Said(text))

    def close(self) -> None:
        """Draw the last frame and stop redrawing. Idempotent."""
        if self._live is not None:
            live, self._live = self._live, None
            live.stop()

    def __enter__(self) -> LiveView:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _plain(self, event: LiveEvent) -> list[str]:
        if isinstance(event, BeeFinished | Report):
            if event.bee in self._announced:  # the report and the coordinator both say so
                return []
            self._announced.add(event.bee)
        return plain_lines(event, self.state)

    def _print(self, lines: Iterable[str]) -> None:
        text = "".join(line + "\n" for line in lines)
        if not text or self._output_lost:
            return
        out = self._stream or sys.stdout
        try:
            out.write(text)
            out.flush()
        except OSError as e:
            # Whoever reads the lines went away (`hive start … | head`) or cannot take more (a full disk):
            # the run matters more than its log, so it goes on unseen (`hive tail` still shows it).
            self._output_lost = True
            if isinstance(e, BrokenPipeError) and out is sys.stdout:
                discard_stdout()
            else:
                with contextlib.suppress(OSError):  # stderr may be gone too
                    log.warning(f"the live view stopped: cannot write to {getattr(out, 'name', 'its output')}: "
                                f"{e.strerror or e}; the run goes on")

    def _draw(self) -> RenderableType:
        with self._lock:
            return render(self.state, self._console.width, dt.datetime.now(dt.UTC))


def open_view(
    mode: ViewMode,
    info: RunInfo,
    *,
    console: Console | None = None,
    stream: TextIO | None = None,
    run_dir: RunPaths | None = None,
) -> LiveView:
    """Open the live view for a run. ``console`` (rich mode) and ``stream`` (plain mode, default stdout) let
    tests draw to a fixed-width console or a buffer. ``run_dir``: what the run's board and gate log already
    hold is counted first, so that a resumed run's header tells the whole run, not only what came since."""
    if mode not in ("rich", "plain", "quiet"):
        raise ValueError(f"unknown view mode {mode!r}")
    return LiveView(mode, info, console=console, stream=stream, run_dir=run_dir)
