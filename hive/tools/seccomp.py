"""A seccomp filter for the bash sandbox: no Unix-domain sockets.

bubblewrap's own network namespace cuts every TCP/UDP route and the abstract Unix sockets, but not a socket
*file*: the host is bound read-only at ``/``, and connecting to a socket file needs no write permission.
Through ``/run/docker.sock``, ``/run/user/<uid>/`` (ssh-agent, gpg-agent, D-Bus) or ``/run/postgresql`` a
command could act on the host. So the sandbox refuses ``socket(AF_UNIX, …)`` with ``EAFNOSUPPORT``, as a
kernel without Unix sockets would; programs that only try (glibc asking nscd, say) carry on without.

The filter is a classic BPF program in the form bubblewrap's ``--seccomp FD`` reads (what libseccomp's
``seccomp_export_bpf`` writes), built here so hive needs no libseccomp. It knows the system call numbers of
x86_64 and aarch64; on another machine :func:`unix_socket_filter` returns None and the sandbox goes without.
A process of another architecture (a 32-bit binary on x86_64, whose ``socketcall`` would bypass the check)
is killed at its first system call.
"""

from __future__ import annotations

import os
import platform
import struct

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS: load a 32-bit word of struct seccomp_data
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

_NR, _ARCH, _ARG0 = 0, 4, 16  # offsets in struct seccomp_data (little-endian: arg 0's low word at 16)

_ALLOW = 0x7FFF0000
_KILL_PROCESS = 0x80000000
_ERRNO = 0x00050000
_EAFNOSUPPORT = 97
_AF_UNIX = 1

_X32_BIT = 0x40000000
_ARCHES: dict[str, tuple[int, tuple[int, ...]]] = {
    # machine: (AUDIT_ARCH_*, the numbers of socket(2), x32's too)
    "x86_64": (0xC000003E, (41, _X32_BIT | 41)),
    "aarch64": (0xC00000B7, (198,)),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


def unix_socket_filter(machine: str | None = None) -> bytes | None:
    """The compiled filter for ``machine`` (default: this one), or None where its numbers are unknown."""
    known = _ARCHES.get(machine or platform.machine())
    if known is None:
        return None
    arch, socket_numbers = known
    program = [_op(_LD_W_ABS, _ARCH), _op(_JEQ_K, arch, jt=1), _op(_RET_K, _KILL_PROCESS), _op(_LD_W_ABS, _NR)]
    for index, number in enumerate(socket_numbers):
        # Jump to the argument check, past the remaining comparisons and the ALLOW after them.
        program.append(_op(_JEQ_K, number, jt=len(socket_numbers) - index))
    program += [
        _op(_RET_K, _ALLOW),
        _op(_LD_W_ABS, _ARG0),
        _op(_JEQ_K, _AF_UNIX, jf=1),
        _op(_RET_K, _ERRNO | _EAFNOSUPPORT),
        _op(_RET_K, _ALLOW),
    ]
    return b"".join(program)


def filter_fd(program: bytes) -> int:
    """A fresh descriptor holding ``program`` at offset 0, for one ``bwrap --seccomp FD`` (it reads to the end)."""
    fd = os.memfd_create("hive-seccomp", os.MFD_CLOEXEC)
    try:
        os.write(fd, program)
        os.lseek(fd, 0, os.SEEK_SET)
    except BaseException:
        os.close(fd)
        raise
    return fd
