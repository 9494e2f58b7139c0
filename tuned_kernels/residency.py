"""How many programs of a compiled kernel one multiprocessor holds at once: the least that its threads, its
registers and its shared memory allow (CUDA's occupancy rule, leaving out allocation granularity). Pure.

A matmul tile of 64 x 128 with three pipeline stages of fp16 operands takes 72 KiB of shared memory, with
four 96 KiB: an H100's multiprocessor (228 KiB) holds three programs of the one and two of the other, so
the same 320 programs run in one wave or in two."""

from __future__ import annotations

from dataclasses import dataclass

RESERVED_SHARED_BYTES = 1024  # the driver's own shared memory per program (compute capability 8.0 on)
WARP = 32
# resident programs (thread blocks) per multiprocessor at most, by compute capability: 32 elsewhere
FEWER_PROGRAMS = {(7, 5): 16, (8, 6): 16, (8, 7): 16, (8, 9): 24}


@dataclass(frozen=True)
class Multiprocessor:
    threads: int  # resident threads at most
    registers: int  # 32-bit registers
    shared_bytes: int  # shared memory
    programs: int = 32  # resident programs (thread blocks) at most

    @staticmethod
    def of(capability: tuple[int, int], threads: int, registers: int, shared_bytes: int) -> Multiprocessor:
        return Multiprocessor(threads, registers, shared_bytes, FEWER_PROGRAMS.get(capability, 32))


def resident(mp: Multiprocessor, warps: int, registers_per_thread: int, shared_bytes: int) -> int:
    """Programs of a kernel that `mp` holds at once (0: not one fits, or a figure is missing)."""
    threads = warps * WARP
    if threads <= 0 or registers_per_thread <= 0 or shared_bytes < 0:
        return 0
    return max(
        0,
        min(
            mp.programs,
            mp.threads // threads,
            mp.registers // (registers_per_thread * threads),
            mp.shared_bytes // (shared_bytes + RESERVED_SHARED_BYTES),
        ),
    )
