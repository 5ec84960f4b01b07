"""Run hive where a directory really cannot be read: ``chmod 000``, and for root (which tests run as) its
capabilities to override file permissions dropped with ``setpriv``, so the kernel says EACCES for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

_DROP = "-dac_override,-dac_read_search"


def _prefix() -> list[str]:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv cannot be denied a directory")
    return [setpriv, f"--bounding-set={_DROP}", f"--inh-caps={_DROP}", "--"]


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """``directory`` with no permissions at all, restored afterwards so the test's tmp dir can be cleaned."""
    mode = directory.stat().st_mode
    directory.chmod(0)
    try:
        yield
    finally:
        directory.chmod(mode)


def hive_denied(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m hive ARGS`` as a process that permissions apply to (the environment is the test's)."""
    return subprocess.run([*_prefix(), sys.executable, "-m", "hive", *args], capture_output=True, text=True,
                          timeout=60)


def assert_denied(directory: Path) -> None:
    """Guard against a test that proves nothing: the process really cannot list ``directory``."""
    probe = subprocess.run([*_prefix(), sys.executable, "-c", f"import os; os.listdir({str(directory)!r})"],
                           capture_output=True, text=True, timeout=60)
    assert "PermissionError" in probe.stderr, probe.stderr
