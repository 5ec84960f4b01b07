"""Printing to a stdout whose reader may go away: ``hive tail --json | head -1``, a log pipe that dies.

A reader that stops reading has had what it wanted; that is not an error. The watchers stop printing,
quietly, and a run being watched goes on.
"""

from __future__ import annotations

import os
import sys


def discard_stdout() -> None:
    """Point stdout's file descriptor at /dev/null once its reader has gone, so that what is still buffered,
    and whatever is printed later, goes nowhere instead of raising again (Python flushes stdout at exit and
    would complain). A stdout without a file descriptor (a test's capture) is left alone."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # io.UnsupportedOperation is both
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)
