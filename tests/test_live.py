"""The live view of ``hive start``: the fold, plain lines, and a rich panel never wider than the terminal."""

from __future__ import annotations

import datetime as dt
import io
import subprocess
import sys
from pathlib import Path

import pytest
from observe_runs import gate_decisions, write_run
from rich.cells import cell_len
from rich.console import Console

from hive.observe.live import (
    BeeFinished,
    BeeStarted,
    LiveState,
    Said,
    open_view,
    panel_lines,
    recorded_events,
    render,
)
from hive.records import (
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
)
from hive.runs import load_run_info

START = "2026-11-30T03:00:00.000Z"


def at(second: int) -> str:
    return f"2026-11-30T03:{second // 60:02d}:{second % 60:02d}.000Z"


def when(second: int) -> dt.datetime:
    return dt.datetime(2026, 11, 30, 3, second // 60, second % 60, tzinfo=dt.UTC)


def info() -> RunInfo:
    return RunInfo(id="20261130-030000-live", problem="Why does the export drop rows?", repo=".",
                   started_at=START, model="openai:gpt-4.1-mini")


def bee(id: str, role: str = "investigator") -> BeeInfo:
    return BeeInfo(id=id, angle=f"the angle of {id}", role=role, model="openai:gpt-4.1-mini")


def events() -> list[object]:
    long_text = "FOUND: " + "the batching drops the final partial batch of rows " * 6
    return [
        Said("planning 3 angles", at=at(0)),
        BeeStarted(bee("bee-1"), at=at(1)),
        BeeStarted(bee("bee-2"), at=at(1)),
        BeeStarted(bee("bee-3"), at=at(1)),
        Ready(bee="bee-1", pid=11, at=at(2)),
        Activity(bee="bee-1", text="read 6 files", tool="read", step=1, at=at(3)),
        Activity(bee="bee-1", text="ran `pytest -x`: exit 1", tool="bash", step=2, at=at(4)),
        Activity(bee="bee-2", text="searched for `batch_size`: 12 hits", tool="grep", step=1, at=at(4)),
        Usage(bee="bee-1", input_tokens=9000, output_tokens=3000, cost_usd=0.02, at=at(5)),
        Usage(bee="bee-2", input_tokens=500, output_tokens=100, at=at(5)),
        Utterance(bee="bee-1", seq=1, text=long_text, at=at(6)),
        GateDecision(id="g-1", gate="publish", outcome="publish", source="judge", latency_ms=4, at=at(6)),
        Note(id="n-1", bee="bee-1", kind="finding", text=long_text, score=0.92, at=at(6)),
        GateDecision(id="g-2", gate="deliver", outcome="deliver", source="judge", latency_ms=3, at=at(7)),
        # a gate switched off: its fallback decides without asking the judge
        GateDecision(id="g-6", gate="deliver", outcome="skip", source="fallback", reason="off", at=at(7)),
        Utterance(bee="bee-2", seq=1, text="Let me look at\nthe writer next.", at=at(7)),
        GateDecision(id="g-4", gate="publish", outcome="withhold", source="judge", latency_ms=5, bee="bee-2",
                     utterance="bee-2#1", text="Let me look at\nthe writer next.", at=at(7)),
        GateDecision(id="g-5", gate="publish", outcome="duplicate", source="rule", reason="duplicate of n-1",
                     bee="bee-2", utterance="bee-2#2", text=long_text, at=at(8)),
        Delivery(note="n-1", to="bee-2", how="judge", at=at(7)),
        Note(id="n-2", bee="bee-2", kind="finding", text="FOUND: rows with a NULL email are dropped.",
             score=0.8, at=at(8)),
        Relation(later="n-2", earlier="n-1", relation="contradicts", score=0.7, at=at(9)),
        Dispute(id="d-1", notes=("n-1", "n-2"), at=at(9)),
        Delivery(note="n-2", to="bee-1", how="conflict", replaces="n-1", at=at(9)),
        GateDecision(id="g-3", gate="conflict", outcome="deliver", source="rule", at=at(9)),
        Verifier(bee="verify-1", dispute="d-1", notes=("n-1", "n-2"), at=at(20)),
        BeeStarted(bee("verify-1", role="verifier"), at=at(20)),
        Note(id="n-3", bee="verify-1", kind="finding", text="FOUND: NULL emails are written.", score=0.99,
             at=at(30)),
        Relation(later="n-3", earlier="n-2", relation="supersedes", score=0.95, at=at(31)),
        Resolution(dispute="d-1", superseded="n-2", by="n-3", at=at(31)),
        Delivery(note="n-3", to="bee-2", how="correction", replaces="n-2", at=at(31)),
        Received(bee="bee-2", delivered=["n-3"], at=at(32)),
        Report(bee="bee-2", text="done", outcome="reported", at=at(33)),
        BeeFinished("bee-2", "reported", None, at=at(33)),
        BeeFinished("bee-3", "crashed", "exited with code 1 without a report", at=at(34)),
    ]


def folded() -> LiveState:
    state = LiveState.from_info(info())
    for event in events():
        state.apply(event)  # type: ignore[arg-type]
    return state


def test_the_fold_counts_what_the_header_shows() -> None:
    state = folded()
    # deliveries as the audit's "delivered" (judge or rule); corrections and conflict notices apart
    assert (len(state.board.notes), state.deliveries, state.corrections, state.conflict_notices) == (3, 1, 1, 1)
    assert (state.decisions, state.judge_decisions, state.withheld) == (6, 3, 2)  # g-6 asked no judge
    assert (state.tokens, state.cost_usd) == (12600, 0.02)
    assert state.counts() == {"working": 2, "done": 1, "failed": 1}
    one = state.bees["bee-1"]
    assert (one.step, one.tool_calls, one.notes_out, one.notes_in, one.activity) == (
        2, 2, 1, 1, "ran `pytest -x`: exit 1")
    assert state.bees["bee-2"].notes_in == 2
    assert state.message == "planning 3 angles"
    assert state.board.open_disputes() == []


def test_panel_shows_bees_activity_silence_and_notes() -> None:
    state = folded()
    text = "\n".join(line for line, _ in panel_lines(state, 200, when(50)))
    assert "4 bees: 2 working, 1 done, 1 failed" in text
    assert ("board 3 notes · 2 withheld · 1 delivery · 1 correction · 1 conflict notice · 1 dispute (0 open) · "
            "3 judge decisions") in text
    assert "12.6k tokens · $0.02" in text
    priceless = LiveState.from_info(info())
    assert "0 tokens · cost unknown" in "\n".join(line for line, _ in panel_lines(priceless, 200, when(1)))
    assert "› planning 3 angles" in text
    assert "↳ no sign of life for 44 s" in text  # bee-1, last heard of at 03:00:06 (its utterance)
    assert "↳ exited with code 1 without a report" in text
    assert "bee-2 → bee-1  finding 0.80 (no longer stands)" in text
    assert "bee-1 → bee-2  finding 0.92" in text
    lively = "\n".join(line for line, _ in panel_lines(state, 200, when(10)))
    assert "↳ ran `pytest -x`: exit 1" in lively and "no sign of life" not in lively


def test_a_contested_note_is_marked() -> None:
    state = LiveState.from_info(info())
    for event in events()[:22]:  # up to the dispute, before the verifier settles it
        state.apply(event)  # type: ignore[arg-type]
    text = "\n".join(line for line, _ in panel_lines(state, 200, when(10)))
    assert "(in dispute)" in text


@pytest.mark.parametrize("width", [40, 60, 80, 120])
def test_rich_panel_is_never_wider_than_the_console(width: int) -> None:
    state = folded()
    state.apply(Note(id="n-4", bee="bee-1", kind="finding", score=0.9, at=at(40),
                     text="FOUND: 漢字の列が幅を二倍に取る " * 10))
    state.apply(Activity(bee="verify-1", text="read " + "a/very/long/path/" * 20, step=1, at=at(41)))
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(render(state, width, when(50)))
    lines = console.export_text().splitlines()
    assert len(lines) > 10
    assert max(cell_len(line) for line in lines) <= width
    assert any("bee-1" in line for line in lines)


def test_plain_mode_prints_timestamped_lines_without_control_codes() -> None:
    out = io.StringIO()
    with open_view("plain", info(), stream=out) as view:
        for event in events():
            view.on_event(event)  # type: ignore[arg-type]
        view.bee_finished("bee-1", "cut_short", "time limit")
    lines = out.getvalue().splitlines()
    assert lines[:4] == [
        "03:00:00 planning 3 angles",
        "03:00:01 bee-1 started (investigator, openai:gpt-4.1-mini): the angle of bee-1",
        "03:00:01 bee-2 started (investigator, openai:gpt-4.1-mini): the angle of bee-2",
        "03:00:01 bee-3 started (investigator, openai:gpt-4.1-mini): the angle of bee-3",
    ]
    assert "03:00:03 bee-1 read 6 files" in lines
    assert "03:00:07 delivered n-1 -> bee-2 (judge)" in lines
    assert "03:00:09 n-2 contradicts n-1 (0.70)" in lines
    assert "03:00:09 dispute d-1 opened: n-1 vs n-2" in lines
    assert "03:00:09 conflict notice -> bee-1: n-2, disputed with n-1" in lines
    assert "03:00:20 verifier verify-1 spawned on dispute d-1" in lines
    assert "03:00:31 dispute d-1 resolved: n-2 superseded by n-3" in lines
    assert "03:00:31 correction -> bee-2: n-3 replaces n-2" in lines
    assert [line for line in lines if "bee-2 finished" in line] == ["03:00:33 bee-2 finished: reported"]
    assert "03:00:34 bee-3 finished: crashed (exited with code 1 without a report)" in lines
    assert lines[-1].endswith("bee-1 finished: cut short (time limit)")
    note = next(line for line in lines if " note n-1 " in line)
    assert note.startswith("03:00:06 note n-1 bee-1 finding 0.92: FOUND: the batching") and len(note) < 360
    assert not any("g-1" in line or "utterance" in line for line in lines)  # decisions and words are chatty
    # ... but an utterance kept off the board is shown, on one line, with why.
    assert "03:00:07 withheld bee-2#1 (judge): Let me look at the writer next." in lines
    duplicate = next(line for line in lines if "bee-2#2" in line)
    assert duplicate.startswith("03:00:08 withheld bee-2#2 (duplicate of n-1)")
    assert "\x1b" not in out.getvalue()


def test_plain_mode_escapes_control_characters_a_model_wrote() -> None:
    out = io.StringIO()
    view = open_view("plain", info(), stream=out)
    view.on_event(Note(id="n-1", bee="bee-1", kind="finding", score=0.9, text="FOUND: \x1b[31mred\x1b[0m"))
    view.close()
    assert "\x1b" not in out.getvalue() and "\\x1b[31mred" in out.getvalue()


def test_what_bees_and_the_coordinator_wrote_never_drives_the_terminal() -> None:
    # An activity quotes the model's command, a failed bee's reason may quote an exception's text.
    clear = "\x1b[2J\x1b[H"
    said = [
        BeeStarted(bee("bee-1"), at=at(1)),
        Activity(bee="bee-1", text=f"ran `printf '{clear}'`: exit 0", tool="bash", step=1, at=at(2)),
        Said(f"planning{clear}", at=at(3)),
        Report(bee="bee-1", text="done", outcome="failed", reason=f"ProviderError: {clear}", at=at(4)),
    ]
    out = io.StringIO()
    with open_view("plain", info(), stream=out) as view:
        for event in said:
            view.on_event(event)  # type: ignore[arg-type]
    assert "\x1b" not in out.getvalue()
    assert "03:00:02 bee-1 ran `printf '\\x1b[2J\\x1b[H'`: exit 0" in out.getvalue().splitlines()

    state = LiveState.from_info(info())
    for event in said[:3]:
        state.apply(event)  # type: ignore[arg-type]
    working = [line for line, _ in panel_lines(state, 200, when(5))]
    state.apply(said[3])  # type: ignore[arg-type]
    failed = [line for line, _ in panel_lines(state, 200, when(5))]
    assert not any("\x1b" in line for line in working + failed)
    assert "  ↳ ran `printf '\\x1b[2J\\x1b[H'`: exit 0" in working
    assert "  ↳ ProviderError: \\x1b[2J\\x1b[H" in failed


class ClosedPipe(io.StringIO):
    """A stdout whose reader went away after ``lines`` lines (``hive start … | head``)."""

    def __init__(self, lines: int) -> None:
        super().__init__()
        self.left = lines

    def write(self, text: str) -> int:
        if self.left <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.left -= text.count("\n")
        return super().write(text)


def test_a_reader_that_goes_away_does_not_stop_the_run() -> None:
    out = ClosedPipe(lines=2)
    with open_view("plain", info(), stream=out) as view:
        for event in events():
            view.on_event(event)  # type: ignore[arg-type]
        view.bee_finished("bee-1", "reported", None)
    assert out.getvalue().splitlines() == [
        "03:00:00 planning 3 angles",
        "03:00:01 bee-1 started (investigator, openai:gpt-4.1-mini): the angle of bee-1",
    ]
    assert len(view.state.board.notes) == 3  # the view still follows the run, it just shows nothing


def test_a_full_disk_stops_the_view_with_one_warning(caplog: pytest.LogCaptureFixture) -> None:
    class FullDisk(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(28, "No space left on device")

    with open_view("plain", info(), stream=FullDisk()) as view:
        for event in events():
            view.on_event(event)  # type: ignore[arg-type]
    warnings = [r.getMessage() for r in caplog.records if r.name == "hive.observe"]
    assert len(warnings) == 1 and "No space left on device; the run goes on" in warnings[0]


def test_a_terminal_that_cannot_redraw_gets_plain_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "dumb")
    buffer = io.StringIO()
    console = Console(width=60, file=buffer, force_terminal=True)
    with open_view("rich", info(), console=console) as view:
        view.message("planning 3 angles")
        view.bee_started(bee("bee-1"))
    assert view.mode == "plain"
    assert buffer.getvalue().splitlines()[0].endswith(" planning 3 angles")
    assert "\x1b" not in buffer.getvalue()


def test_a_resumed_run_is_counted_whole_from_its_files(tmp_path: Path) -> None:
    paths = write_run(tmp_path, status="interrupted")  # three bees and a verifier, all ended; 5 notes
    out = io.StringIO()
    with open_view("plain", load_run_info(paths), stream=out, run_dir=paths) as view:
        view.bee_started(BeeInfo(id="bee-1", angle="again", model="m-small"))
    assert out.getvalue().count("\n") == 1  # what came before is counted, not printed again
    text = "\n".join(line for line, _ in panel_lines(view.state, 200, when(50)))
    judged = sum(d.source != "rule" for d in gate_decisions())
    tokens = 1200 + sum(d.tokens for d in gate_decisions())  # bee-1's in run.json, the judge's in the gate log
    assert "4 bees: 1 working, 3 done, 0 failed" in text
    assert (f"board 5 notes · 3 withheld · 4 deliveries · 1 correction · 1 conflict notice · 2 disputes (1 open) · "
            f"{judged} judge decisions · {tokens} tokens · $0.0100") in text
    assert "bee-3     cut short  investigator" in text and "↳ time limit" in text
    assert "bee-1     working  investigator" in text  # started again: its earlier outcome is history
    assert "verify-1 → bee-3  finding 0.99" in text
    # the files being written as the view opens: a torn last line and a corrupt one are left out quietly
    with paths.board.open("ab") as f:
        f.write(b'{"type": "note", "id": "n-9"\n{"type": "no')
    assert len(LiveState.from_info(load_run_info(paths), recorded_events(paths)).board.notes) == 5


def test_quiet_mode_prints_nothing_but_still_folds() -> None:
    out = io.StringIO()
    with open_view("quiet", info(), stream=out) as view:
        for event in events():
            view.on_event(event)  # type: ignore[arg-type]
        view.message("writing the answer")
    assert out.getvalue() == ""
    assert len(view.state.board.notes) == 3


def test_rich_view_draws_to_its_console_and_stops_on_close(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")  # a terminal that can redraw, whatever the tests run in
    buffer = io.StringIO()
    console = Console(width=60, record=True, file=buffer, force_terminal=True, color_system=None)
    view = open_view("rich", info(), console=console)
    view.bee_started(bee("bee-1"))
    view.on_event(Activity(bee="bee-1", text="read 6 files", step=1))
    view.message("planning angles…")
    view.close()
    view.close()
    text = console.export_text()
    assert "read 6 files" in text and "planning angles…" in text
    assert max(cell_len(line) for line in text.splitlines()) <= 60


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown view mode"):
        open_view("fancy", info())  # type: ignore[arg-type]


def test_help_does_not_load_the_live_view_or_the_watcher() -> None:
    code = (
        "import sys, hive.cli, contextlib, io\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    hive.cli.main(['--help'])\n"
        "print(sorted(m for m in ('rich.live', 'hive.observe.live', 'hive.observe.tail', 'watchfiles')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
