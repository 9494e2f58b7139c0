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


def test_a_measured_miss_keeps_how_many_programs_each_timed_config_held() -> None:
    """What a capture records from a program's misses, as `tune` records it: a bundle made either way
    predicts other keys by the same waves."""
    from tests import factories
    from tuned_kernels.decision import Decision, Measured, measured_entry

    small, large = factories.config(64), factories.config(128)
    measured = Measured(
        factories.entry().kernel,
        (640, 4096),
        Decision("miss"),
        {small: 1.0, large: 1.2},
        resident={small: 3, large: 2},
    )
    entry = measured_entry(measured)
    assert entry is not None
    assert [(t.config, t.resident) for t in entry.timings] == [(small, 3), (large, 2)]


def test_gpus_that_hold_fewer_programs_say_so_by_their_compute_capability() -> None:
    ada = Multiprocessor.of((8, 9), threads=1536, registers=65536, shared_bytes=102400)
    assert (ada.programs, Multiprocessor.of((9, 0), 2048, 65536, 233472).programs) == (24, 32)
    assert resident(ada, warps=1, registers_per_thread=16, shared_bytes=0) == 24


def test_an_interpreted_kernel_has_no_residency() -> None:
    """On the CPU (Triton's interpreter) nothing is compiled: not known, never a guess."""
    from pathlib import Path

    from tests import factories
    from tuned_kernels.triton_edge.compile import resident_programs

    pruned = factories.script_module(Path(__file__).parent / "corpora" / "pruned.py")
    import torch

    x = torch.arange(64.0)
    named = {"x_ptr": x, "y_ptr": torch.empty_like(x), "n": 64}
    assert resident_programs(pruned.add_one_kernel, named, factories.config(16, warps=1)) == 0
