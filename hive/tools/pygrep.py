"""The pure-Python grep, as a process of its own: ``python -P -m hive.tools.pygrep``.

:class:`hive.tools.fs.GrepTool` runs it when ripgrep is missing and reads its output as it reads ripgrep's: one
``path:line:text`` line per hit, paths relative to the repository root, in ripgrep's ``--sort path`` order. A
process, not a thread, so that the bee can kill it: see :meth:`hive.tools.fs.GrepTool._python`.
Exit status 0 when the search finished, :data:`~hive.tools.fs.PARTIAL_EXIT` when it stopped at ``--seconds``.
"""

from __future__ import annotations

import argparse
import math
import re
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from hive.tools.common import glob_matches
from hive.tools.fs import PARTIAL_EXIT, IgnoreRules, RepoRoot, search_file, walk_files


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -P -m hive.tools.pygrep")
    parser.add_argument("--root", required=True, help="the repository root")
    parser.add_argument("--exclude", action="append", default=[], help="a directory to leave out (repeatable)")
    parser.add_argument("--glob", help="only files whose path from the root matches this glob")
    parser.add_argument("--ignore-case", action="store_true")
    parser.add_argument("--seconds", type=float, required=True, help="stop after this long, exit 3")
    parser.add_argument("pattern", help="a Python regular expression")
    parser.add_argument("target", help="the file or directory to search, under the root")
    args = parser.parse_args(argv)
    deadline = time.monotonic() + args.seconds
    # The bee kills this process at the time limit; should the bee itself be killed first, the alarm's default
    # action ends it all the same, even inside a backtracking match (no Python handler needs to run).
    signal.alarm(math.ceil(args.seconds) + 5)
    root = RepoRoot(Path(args.root), [Path(path) for path in args.exclude])
    regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
    target = root.path / args.target  # an absolute target stays as it is
    files: Iterator[Path] = (
        iter([target]) if target.is_file() else walk_files(root, target, IgnoreRules.load(root.path), deadline)
    )
    out = sys.stdout.buffer
    for path in files:
        shown = root.display(path)
        if not args.glob or glob_matches(args.glob, shown):
            search_file(regex, path, shown, lambda line: out.write(line + b"\n"))
    out.flush()
    return PARTIAL_EXIT if time.monotonic() > deadline else 0


if __name__ == "__main__":
    sys.exit(main())
