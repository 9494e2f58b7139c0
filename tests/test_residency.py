"""How many programs of a compiled kernel one multiprocessor holds at once: the least that its threads,
registers and shared memory allow."""

from tuned_kernels.residency import RESERVED_SHARED_BYTES, Multiprocessor, resident

HOPPER = Multiprocessor(threads=2048, registers=65536, shared_bytes=233472)  # an H100's or H200's


def test_shared_memory_bounds_a_deep_pipeline() -> None:
    # a 64 x 128 fp16 matmul tile: 3 stages of operands take 72 KiB, 4 take 96 KiB
    assert resident(HOPPER, warps=4, registers_per_thread=96, shared_bytes=72 * 1024) == 3
    assert resident(HOPPER, warps=4, registers_per_thread=96, shared_bytes=96 * 1024) == 2
    assert resident(HOPPER, 4, 96, HOPPER.shared_bytes - RESERVED_SHARED_BYTES + 1) == 0  # does not fit


def test_registers_threads_and_the_programs_limit_bound_the_rest() -> None:
    assert resident(HOPPER, warps=8, registers_per_thread=255, shared_bytes=0) == 1  # 8 x 32 x 255 registers
    assert resident(HOPPER, warps=4, registers_per_thread=128, shared_bytes=0) == 4
    assert resident(HOPPER, warps=16, registers_per_thread=32, shared_bytes=0) == 4  # 512 threads each
    assert resident(HOPPER, warps=1, registers_per_thread=16, shared_bytes=0) == 32  # programs at most


def test_a_missing_figure_says_not_known() -> None:
    assert resident(HOPPER, warps=4, registers_per_thread=0, shared_bytes=1024) == 0
    assert resident(HOPPER, warps=0, registers_per_thread=32, shared_bytes=1024) == 0
