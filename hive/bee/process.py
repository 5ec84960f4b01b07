"""The bee process after ``ready``: build the role, model and toolbox, run the loop, hand in the report.

:func:`run` is what ``python -m hive.bee`` calls once it has sent ``ready`` (see :mod:`hive.bee.__main__`).
The role, the provider and the tools are imported only here, so that ``ready`` never waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from pathlib import Path

from hive.bee.channel import Channel, ChannelClosed, StdioChannel
from hive.bee.loop import BeeLoop
from hive.bee.prompts import one_line, system_prompt
from hive.bee.resume import Resumed, resume_conversation
from hive.bee.transcript import Transcript
from hive.errors import HiveError
from hive.records import BeeBrief, BeeOutcome, Report, TranscriptEntry
from hive.runs import RunPaths
from hive.secrets import Scrubber, secret_values
from hive.store import read_all

log = logging.getLogger("hive.bee")


def run(brief: BeeBrief, protocol_fd: int) -> int:
    """Run the bee on the process's stdin and ``protocol_fd``; return the exit code."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="hive.bee: %(levelname)s: %(message)s")
    try:
        return asyncio.run(_serve_stdio(brief, protocol_fd))
    except ChannelClosed:
        return 1


async def _serve_stdio(brief: BeeBrief, protocol_fd: int) -> int:
    channel = StdioChannel(protocol_fd)
    try:
        return await serve(brief, channel)
    finally:
        channel.close()


async def serve(brief: BeeBrief, channel: Channel) -> int:
    """Run one bee whose ``ready`` has been sent, from its setup to its report; return the exit code.

    A setup problem hive raises on purpose (unknown role, bad model spec, missing key, a repository that is
    not a directory) is a ``failed`` report; anything else is ``crashed``. Either way a report is sent.
    """
    scrubber = Scrubber(secret_values())
    transcript: Transcript | None = None
    model = toolbox = None
    try:
        try:
            transcript_path = RunPaths(Path(brief.run_dir)).transcript(brief.bee)
            resumed = _resumed(transcript_path) if brief.resume else None
            transcript = Transcript(transcript_path, scrubber)
            from hive.providers.registry import infer_model
            from hive.roles import load_role
            from hive.tools.registry import Toolbox

            # Where the coordinator resolved it: <repo>/.hive/roles first, whatever directory we run in.
            role = load_role(brief.role, cwd=Path(brief.repo))
            model = infer_model(brief.model or role.model or "", agent=brief.bee)
            toolbox = Toolbox(
                Path(brief.repo),
                role.tools,
                unsafe_bash=brief.unsafe_bash,
                exclude=hive_output(Path(brief.repo), Path(brief.run_dir)),
            )
        except HiveError as e:
            return _early_end(channel, transcript, brief, "failed", one_line(str(e)))
        except Exception as e:
            log.exception("bee %s could not start", brief.bee)
            return _early_end(channel, transcript, brief, "crashed", one_line(f"{type(e).__name__}: {e}"))
        loop = BeeLoop(
            brief,
            model=model,
            toolbox=toolbox,
            channel=channel,
            transcript=transcript,
            system_prompt=system_prompt(role.prompt, brief),
            scrubber=scrubber,
            resumed=resumed,
        )
        running = asyncio.get_running_loop()
        for signum, reason in ((signal.SIGTERM, "terminated"), (signal.SIGINT, "interrupted")):
            running.add_signal_handler(signum, loop.request_stop, reason)
        try:
            return exit_code(await loop.run())
        finally:
            for signum in (signal.SIGTERM, signal.SIGINT):
                running.remove_signal_handler(signum)
    finally:
        if toolbox is not None:
            await toolbox.aclose()
        if model is not None:
            await model.aclose()
        if transcript is not None:
            transcript.close()


def hive_output(repo: Path, run_dir: Path) -> list[Path]:
    """hive's own output, which the bee's tools must treat as absent: the runs directory when it holds nothing
    but runs, else (a project's own ``runs/``, or a runs directory that holds the repository) each run in it.

    ``hive start --repo .`` with the default ``./runs`` writes every run inside the repository. Seen by the
    tools, a bee's searches would find its own transcript (each grep more of its earlier results) and it
    would read the board, the gate log and the other bees' transcripts: notes the gates withheld, and other
    bees' words outside the quoted "findings, not instructions" frame. ``bash`` could reach them anywhere on
    the machine, so it gets them masked wherever they are; the file tools are confined to the repository
    already.
    """
    repo, run_dir = repo.resolve(), run_dir.resolve()
    runs = run_dir.parent
    try:
        entries = list(runs.iterdir())
    except OSError:
        entries = []
    hive_runs = [entry for entry in entries if entry.is_dir() and (entry / "run.json").is_file()]
    if repo.is_relative_to(runs) or len(hive_runs) < len(entries):
        return sorted({run_dir, *hive_runs})
    return [runs]


def _resumed(transcript: Path) -> Resumed:
    """The conversation of this bee's earlier run (a torn or corrupt line is skipped with a warning)."""
    entries, _warnings = read_all(transcript, TranscriptEntry)
    return resume_conversation(entries)


def _early_end(
    channel: Channel, transcript: Transcript | None, brief: BeeBrief, outcome: BeeOutcome, reason: str
) -> int:
    report = Report(bee=brief.bee, text="", outcome=outcome, reason=reason)
    if transcript is not None:
        transcript.write("report", content="", data={"outcome": outcome, "reason": reason})
    with contextlib.suppress(ChannelClosed):
        channel.send(report)
    return exit_code(report)


def exit_code(report: Report) -> int:
    """0 when the bee handed in a report (full or cut short), 1 when it failed or crashed."""
    return 0 if report.outcome in ("reported", "cut_short") else 1
