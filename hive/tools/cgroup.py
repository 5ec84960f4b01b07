"""A pids cgroup per sandboxed command, for root, whom the kernel never holds to ``RLIMIT_NPROC``.

As root, each ``bash`` command's sandbox joins a fresh cgroup whose ``pids.max`` is the process cap, so a
fork bomb stops at the cap instead of filling the machine's process table until the time limit. The cgroup
is found from ``/proc/self/mountinfo`` and ``/proc/self/cgroup``: a cgroup v1 hierarchy with the ``pids``
controller, or cgroup v2 with ``pids`` enabled below hive's own cgroup. Where neither is writable (most
containers), there is no cgroup and the time limit and the PID namespace still contain a fork bomb.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Sequence
from pathlib import Path

EMPTY_SECONDS = 2.0
"""How long a cgroup may take to empty after its sandbox was killed before its stragglers are killed."""
_serial = itertools.count(1)


def _mounts(mountinfo: str) -> list[tuple[str, str, str, str]]:
    """(root, mount point, file system type, super options) of every mount in ``mountinfo``'s text."""
    mounts = []
    for line in mountinfo.splitlines():
        left, _, right = line.partition(" - ")
        fields, after = left.split(), right.split()
        if len(fields) >= 5 and len(after) >= 3:
            mounts.append((fields[3], fields[4].replace("\\040", " "), after[0], after[2]))
    return mounts


def _below(point: str, root: str, path: str) -> Path:
    """Where the cgroup ``path`` (as /proc/self/cgroup names it) is, in a hierarchy mounted at ``point``
    from its cgroup ``root``."""
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    return Path(point) / path.lstrip("/")


def pids_parent(mountinfo: str, cgroups: str) -> Path | None:
    """The directory to make per-command pids cgroups in, or None.

    ``mountinfo`` and ``cgroups`` are the texts of ``/proc/self/mountinfo`` and ``/proc/self/cgroup``. A
    cgroup v1 ``pids`` hierarchy is preferred; cgroup v2 qualifies when ``pids`` is among the controllers
    its current cgroup hands to children (``cgroup.subtree_control``).
    """
    own: dict[str, str] = {}
    for line in cgroups.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    mounts = _mounts(mountinfo)
    for root, point, fstype, options in mounts:
        if fstype == "cgroup" and "pids" in options.split(",") and "pids" in own:
            return _below(point, root, own["pids"])
    for root, point, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            parent = _below(point, root, own[""])
            with contextlib.suppress(OSError):
                if "pids" in (parent / "cgroup.subtree_control").read_text().split():
                    return parent
    return None


def find_pids_parent() -> Path | None:
    """:func:`pids_parent` for this process, if it may create cgroups there (root), else None."""
    if os.geteuid() != 0:
        return None
    try:
        parent = pids_parent(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError:
        return None
    return parent if parent is not None and os.access(parent, os.W_OK) else None


class PidsGroup:
    """One command's pids cgroup: made before the command starts, removed after it ended."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def create(cls, parent: Path, limit: int) -> PidsGroup | None:
        """A new cgroup under ``parent`` holding at most ``limit`` processes, or None if it cannot be made."""
        path = parent / f"hive-{os.getpid()}-{next(_serial)}"
        try:
            path.mkdir()
        except OSError:
            return None
        group = cls(path)
        try:
            (path / "pids.max").write_text(str(limit))
        except OSError:
            group._rmdir()
            return None
        return group

    def join(self, argv: Sequence[str]) -> list[str]:
        """``argv`` started by a shell that first moves itself into the cgroup, then becomes ``argv``."""
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.path / "cgroup.procs"), *argv]

    def _pids(self) -> list[int]:
        with contextlib.suppress(OSError, ValueError):
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        return []

    def _rmdir(self) -> bool:
        try:
            self.path.rmdir()
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    async def remove(self) -> None:
        """Remove the cgroup once it is empty. Processes still in it after :data:`EMPTY_SECONDS` (none can
        outlive a sandbox's init; this is a second line) are killed; if even that does not empty it within
        as long again, it is left behind."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EMPTY_SECONDS
        while not self._rmdir():
            if loop.time() >= deadline + EMPTY_SECONDS:
                return
            if loop.time() >= deadline:
                for pid in self._pids():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.01)
