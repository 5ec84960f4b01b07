"""The sandbox's seccomp filter, run through a small classic-BPF interpreter for each architecture it knows
(tests/test_sandbox.py runs it for real, in bubblewrap, on this machine)."""

from __future__ import annotations

import struct

import pytest

from hive.tools.seccomp import unix_socket_filter

ALLOW, KILL, REFUSED = 0x7FFF0000, 0x80000000, 0x00050000 | 97
ARCHES = {"x86_64": (0xC000003E, 41, 0), "aarch64": (0xC00000B7, 198, 63)}  # arch, socket, read


def run_filter(program: bytes, nr: int, arch: int, arg0: int = 0) -> int:
    """Run ``program`` on one struct seccomp_data (only the instructions hive's filter uses)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    ops = [struct.unpack("<HBBI", program[i : i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = ops[pc]
        if code == 0x20:
            acc = struct.unpack_from("<I", data, k)[0]
            pc += 1
        elif code == 0x15:
            pc += 1 + (jt if acc == k else jf)
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"unexpected instruction {code:#x}")


@pytest.mark.parametrize("machine", sorted(ARCHES))
def test_only_unix_sockets_are_refused(machine: str) -> None:
    arch, socket_nr, read_nr = ARCHES[machine]
    program = unix_socket_filter(machine)
    assert program is not None and len(program) % 8 == 0
    assert run_filter(program, socket_nr, arch, arg0=1) == REFUSED  # socket(AF_UNIX, ...)
    assert run_filter(program, socket_nr, arch, arg0=2) == ALLOW  # socket(AF_INET, ...)
    assert run_filter(program, socket_nr, arch, arg0=10) == ALLOW  # socket(AF_INET6, ...)
    assert run_filter(program, read_nr, arch, arg0=1) == ALLOW
    assert run_filter(program, socket_nr, 0x40000003, arg0=1) == KILL  # a 32-bit process on the same kernel


def test_the_x32_abi_cannot_go_around_it() -> None:
    program = unix_socket_filter("x86_64")
    assert program is not None
    assert run_filter(program, 0x40000000 | 41, 0xC000003E, arg0=1) == REFUSED


def test_an_unknown_machine_gets_no_filter() -> None:
    assert unix_socket_filter("riscv64") is None
