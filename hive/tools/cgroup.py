"""A cgroup per sandboxed command, for root: caps on the whole sandbox that rlimits cannot give.

``RLIMIT_NPROC`` never binds root, and ``RLIMIT_DATA`` caps each process, not a command's processes
together. So when hive runs as root, each ``bash`` command's sandbox joins fresh cgroups: ``pids`` with the
process cap (a fork bomb stops there instead of filling the process table until the time limit) and
``memory`` with the sandbox's memory cap (many processes, or memory the data limit does not count, such
as shared mappings and the private ``/tmp``, are charged there together). The hierarchies are found from
``/proc/self/mountinfo`` and ``/proc/self/cgroup``: cgroup v1 hierarchies with the controller, or cgroup v2
with the controller handed to the children of hive's own cgroup. A controller with neither, or one that is
not writable (most containers), is simply not used; the rlimits and the time limit still apply.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

Controller = Literal["pids", "memory"]
CONTROLLERS: tuple[Controller, ...] = ("pids", "memory")
EMPTY_SECONDS = 2.0
"""How long a cgroup may take to empty after its sandbox was killed before its stragglers are killed."""
JOIN_FAILED = 125
"""The exit code of a command whose shell could not move itself into its cgroups."""
_serial = itertools.count(1)


@dataclass(frozen=True)
class Parent:
    """Where to make a controller's per-command cgroups, and which cgroup version that hierarchy is."""

    path: Path
    v2: bool


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


def cgroup_parents(mountinfo: str, cgroups: str) -> dict[Controller, Parent]:
    """For each controller that has one, the directory to make per-command cgroups in.

    ``mountinfo`` and ``cgroups`` are the texts of ``/proc/self/mountinfo`` and ``/proc/self/cgroup``. A
    cgroup v1 hierarchy with the controller is preferred; cgroup v2 qualifies when the controller is among
    those its current cgroup hands to children (``cgroup.subtree_control``).
    """
    own: dict[str, str] = {}
    for line in cgroups.splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            own[controller] = path
    mounts = _mounts(mountinfo)
    parents: dict[Controller, Parent] = {}
    for root, point, fstype, options in mounts:
        for controller in CONTROLLERS:
            if fstype == "cgroup" and controller in options.split(",") and controller in own:
                parents.setdefault(controller, Parent(_below(point, root, own[controller]), v2=False))
    for root, point, fstype, _ in mounts:
        if fstype == "cgroup2" and "" in own:
            unified = _below(point, root, own[""])
            with contextlib.suppress(OSError):
                handed = (unified / "cgroup.subtree_control").read_text().split()
                for controller in CONTROLLERS:
                    if controller in handed:
                        parents.setdefault(controller, Parent(unified, v2=True))
    return parents


def find_cgroup_parents() -> dict[Controller, Parent]:
    """:func:`cgroup_parents` for this process, those it may create cgroups in; none unless root."""
    if os.geteuid() != 0:
        return {}
    try:
        parents = cgroup_parents(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError:
        return {}
    return {c: p for c, p in parents.items() if os.access(p.path, os.W_OK)}


def _limit_files(controller: Controller, v2: bool, limit: int) -> dict[str, str]:
    if controller == "pids":
        return {"pids.max": str(limit)}
    if v2:
        return {"memory.max": str(limit), "memory.swap.max": "0"}
    return {"memory.limit_in_bytes": str(limit)}


class SandboxGroup:
    """One command's cgroups (one per hierarchy): made before the command starts, removed after it ended."""

    def __init__(self, paths: Sequence[Path]) -> None:
        self.paths = list(paths)

    @classmethod
    def create(cls, parents: Mapping[Controller, Parent], limits: Mapping[Controller, int]) -> SandboxGroup | None:
        """New cgroups under ``parents`` with ``limits``; None if there is nothing to make or it fails."""
        for where in {p.path for p in parents.values()}:
            _sweep(where)
        name = f"hive-{os.getpid()}-{next(_serial)}"
        files: dict[Path, dict[str, str]] = {}
        for controller, limit in limits.items():
            if (parent := parents.get(controller)) is not None:
                files.setdefault(parent.path / name, {}).update(_limit_files(controller, parent.v2, limit))
        group = cls([])
        try:
            for path, values in files.items():
                path.mkdir()
                group.paths.append(path)
                for file, value in values.items():
                    with contextlib.suppress(FileNotFoundError):  # no swap accounting: nothing to cap
                        (path / file).write_text(value)
        except OSError:
            group._rmdir_all()
            return None
        return group if group.paths else None

    def join(self, argv: Sequence[str]) -> list[str]:
        """``argv`` started by a shell that first moves itself into the cgroups, then becomes ``argv``."""
        script = f'while [ "$1" != -- ]; do echo $$ > "$1" || exit {JOIN_FAILED}; shift; done; shift; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *(str(p / "cgroup.procs") for p in self.paths), "--", *argv]

    def hits(self) -> set[Controller]:
        """The caps the command ran into: a fork refused (``pids.events``), a process killed for memory
        (``memory.events`` in v2, ``memory.oom_control`` in v1)."""
        hit: set[Controller] = set()
        for path in self.paths:
            if _counters(path / "pids.events").get("max", 0) > 0:
                hit.add("pids")
            if any(_counters(path / f).get("oom_kill", 0) > 0 for f in ("memory.events", "memory.oom_control")):
                hit.add("memory")
        return hit

    def _rmdir_all(self) -> bool:
        for path in list(self.paths):
            try:
                path.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue
            self.paths.remove(path)
        return not self.paths

    async def remove(self) -> None:
        """Remove the cgroups once they are empty. Processes still in them after :data:`EMPTY_SECONDS` (none
        can outlive a sandbox's init; this is a second line) are killed; if even that does not empty them
        within as long again, they are left behind."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + EMPTY_SECONDS
        while not self._rmdir_all():
            if loop.time() >= deadline + EMPTY_SECONDS:
                return
            if loop.time() >= deadline:
                for path in self.paths:
                    for pid in _pids(path):
                        with contextlib.suppress(ProcessLookupError, PermissionError):
                            os.kill(pid, signal.SIGKILL)
            await asyncio.sleep(0.01)


def _sweep(parent: Path) -> None:
    """Remove the cgroups a killed bee left behind: ours are named ``hive-<pid>-<n>``, and one whose process
    is gone has no one to remove it. A process still in one was orphaned with its bee (bubblewrap killed while
    it set the sandbox up blocks for good before the command, and its lifeline, start) and is killed; its
    cgroup goes at the next sweep, once the process has."""
    with contextlib.suppress(OSError):
        for path in parent.glob("hive-*-*"):
            owner = path.name.split("-")[1]
            if owner.isdigit() and not _alive(int(owner)):
                for pid in _pids(path):
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    path.rmdir()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # alive, and someone else's
    return True


def _counters(path: Path) -> dict[str, int]:
    """The ``name value`` lines of a cgroup file, as a dict; empty if there is no such file."""
    counters = {}
    with contextlib.suppress(OSError):
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            with contextlib.suppress(ValueError):
                counters[name] = int(value)
    return counters


def _pids(path: Path) -> list[int]:
    with contextlib.suppress(OSError, ValueError):
        return [int(pid) for pid in (path / "cgroup.procs").read_text().split()]
    return []
