"""``python -m hive.bee --brief <run>/bees/<bee>/brief.json``: one bee process.

Start-up order matters for speed: this module imports only the records. It reads the brief and sends
``ready``, and only then imports the loop, asyncio, the role, the provider and the tools
(:mod:`hive.bee.process`). Coordinator messages sent meanwhile wait in the stdin pipe.

Stdout belongs to the protocol: it is moved to a private descriptor at once and the process's fd 1 is
pointed at stderr, so a stray ``print`` (ours, a library's, a child's) can never corrupt the channel.

Exit codes: 0 when a report was handed in (``reported`` or ``cut_short``), 1 when the bee ``failed`` or
``crashed`` or the coordinator was gone, 2 when the brief itself is unusable (no report can be sent
without knowing who we are).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pydantic import ValidationError

from hive.errors import UsageError
from hive.records import BeeBrief, Ready
from hive.store import dumps


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
    try:
        brief = load_brief(args.brief)
    except UsageError as e:
        print(f"hive.bee: error: {e}", file=sys.stderr)
        return e.exit_code
    try:
        os.write(protocol_fd, dumps(Ready(bee=brief.bee, pid=os.getpid())))
    except BrokenPipeError:
        return 1
    from hive.bee.process import run

    return run(brief, protocol_fd)


if __name__ == "__main__":
    sys.exit(main())
