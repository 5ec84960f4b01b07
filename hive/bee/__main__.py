"""``python -m hive.bee --brief <run>/bees/<bee>/brief.json``: one bee process.

Start-up order matters for speed: the brief is read and ``ready`` is sent before the role, the model
provider or the tools are imported. Stdout belongs to the protocol: it is moved to a private descriptor
at once and the process's fd 1 is pointed at stderr, so a stray ``print`` (ours, a library's, a child's)
can never corrupt the channel.

Exit codes: 0 when a report was handed in (``reported`` or ``cut_short``), 1 when the bee ``failed`` or
``crashed``, 2 when the brief itself is unusable (no report can be sent without knowing who we are).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path

from pydantic import ValidationError

from hive.bee.channel import Channel, ChannelClosed, StdioChannel
from hive.bee.loop import BeeLoop, exit_code
from hive.bee.prompts import one_line, system_prompt
from hive.bee.transcript import Scrubber, Transcript, secret_values
from hive.errors import HiveError, UsageError
from hive.records import BeeBrief, BeeOutcome, Ready, Report
from hive.runs import RunPaths

log = logging.getLogger("hive.bee")


def load_brief(path: Path) -> BeeBrief:
    """Read ``brief.json``; raise :class:`UsageError` with one line when it is missing or invalid."""
    try:
        return BeeBrief.model_validate_json(path.read_bytes())
    except OSError as e:
        raise UsageError(f"cannot read brief {str(path)!r}: {e.strerror}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "top level"
        raise UsageError(f"brief {str(path)!r}: {where}: {first['msg'].lower()}") from None


async def serve(brief: BeeBrief, channel: Channel) -> int:
    """Run one bee on ``channel`` from ``ready`` to ``report``; return the process exit code."""
    channel.send(Ready(bee=brief.bee, pid=os.getpid()))
    scrubber = Scrubber(secret_values())
    transcript: Transcript | None = None
    model = toolbox = None
    try:
        try:
            transcript = Transcript(RunPaths(Path(brief.run_dir)).transcript(brief.bee), scrubber)
            # Imported only now, after ``ready``: these pull in YAML, the tools and maybe the HTTP stack.
            from hive.providers.registry import infer_model
            from hive.roles import load_role
            from hive.tools.registry import Toolbox

            role = load_role(brief.role)  # user roles resolve from the cwd the coordinator gave us
            model = infer_model(brief.model or role.model or "", agent=brief.bee)
            toolbox = Toolbox(Path(brief.repo), role.tools, unsafe_bash=brief.unsafe_bash)
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


def _early_end(
    channel: Channel, transcript: Transcript | None, brief: BeeBrief, outcome: BeeOutcome, reason: str
) -> int:
    report = Report(bee=brief.bee, text="", outcome=outcome, reason=reason)
    if transcript is not None:
        transcript.write("report", content="", data={"outcome": outcome, "reason": reason})
    with contextlib.suppress(ChannelClosed):
        channel.send(report)
    return exit_code(report)


def _claim_stdout() -> int:
    """Keep the real stdout for the protocol and send everything else written to fd 1 to stderr."""
    sys.stdout.flush()
    protocol_fd = os.dup(1)  # not inherited by children (PEP 446)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return protocol_fd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hive.bee", description="Run one hive bee.")
    parser.add_argument("--brief", required=True, type=Path, help="the bee's brief.json")
    args = parser.parse_args(argv)
    protocol_fd = _claim_stdout()
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="hive.bee: %(levelname)s: %(message)s")
    try:
        brief = load_brief(args.brief)
    except UsageError as e:
        print(f"hive.bee: error: {e}", file=sys.stderr)
        return e.exit_code
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


if __name__ == "__main__":
    sys.exit(main())
