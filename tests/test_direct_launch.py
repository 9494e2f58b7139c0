"""Direct launches: after a specialization's first launch through Triton (served or tuned, compiled,
guarded), later launches call the compiled kernel's launcher with the same config and grid; anything that
cannot be read, and any change of the autotuner's configs or cache, goes back through Triton."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
import torch
import triton

from tuned_kernels.triton_edge.direct_launch import DirectLaunches, specialization, suspended

SMALL, LARGE = triton.Config({"BLOCK": 32}, num_warps=4), triton.Config({"BLOCK": 64}, num_warps=8)


class JITFunction:
    """Stands for Triton's JITFunction (the direct path checks the type's name)."""

    arg_names = ("x", "n", "BLOCK")
    pre_run_hooks = ()


class Heuristics:
    arg_names = JITFunction.arg_names


class FakeAutotuner:
    """Records launches through Triton (`kernel[grid](...)`) and through the compiled kernel's launcher."""

    def __init__(self, fn: Any = None) -> None:
        self.fn = fn or JITFunction()
        self.configs = [SMALL, LARGE]
        self.cache: dict[Any, Any] = {}
        self.best_config = SMALL
        self.log: list[tuple[Any, ...]] = []

    def __getitem__(self, grid: Any) -> Any:
        def run(*args: Any, **constexprs: Any) -> Compiled:
            self.log.append(("triton", args))
            self.cache[args[1]] = self.best_config
            return Compiled(self.fn.arg_names, self.log)

        return run


class Compiled:
    """Stands for Triton's CompiledKernel: its signature, and a launcher per grid."""

    def __init__(self, names: tuple[str, ...], log: list[tuple[Any, ...]]) -> None:
        self.src = SimpleNamespace(signature=dict.fromkeys(names))
        self.log = log

    def __getitem__(self, grid: tuple[int, int, int]) -> Any:
        return lambda *args: self.log.append(("direct", grid, args))


def grid(meta: dict[str, Any]) -> tuple[int]:
    return (meta["n"] // meta["BLOCK"],)


def launches_of(kernel: FakeAutotuner) -> DirectLaunches:
    return DirectLaunches(kernel, current_device=lambda: 0)


def test_a_specialization_launches_through_triton_once_then_through_its_compiled_launcher() -> None:
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    for _ in range(3):
        launches(grid, ("x", 256), {})
    assert kernel.log == [
        ("triton", ("x", 256)),
        ("direct", (8, 1, 1), ("x", 256, 32)),  # grid and constexprs of the config Triton launched
        ("direct", (8, 1, 1), ("x", 256, 32)),
    ]


def test_the_grid_is_asked_each_launch_as_triton_asks_it() -> None:
    """A grid may read values that are not arguments (a batch size, the SM count): a tuple of programs
    per launch, or a function of the launch's arguments and config that closes over such a value."""
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    for rows in (3, 5):
        launches((rows,), ("x", 256), {})
    for batch in (2, 7):
        launches(lambda meta, batch=batch: (meta["n"] // meta["BLOCK"], batch), ("x", 256), {})
    assert [entry[1] for entry in kernel.log[1:]] == [(5, 1, 1), (8, 2, 1), (8, 7, 1)]


def test_another_value_is_another_specialization() -> None:
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    launches(grid, ("x", 256), {})
    kernel.best_config = LARGE
    launches(grid, ("x", 512), {})
    launches(grid, ("x", 512), {})
    launches(grid, ("x", 256), {})
    assert kernel.log[1:] == [
        ("triton", ("x", 512)),
        ("direct", (8, 1, 1), ("x", 512, 64)),
        ("direct", (8, 1, 1), ("x", 256, 32)),
    ]


def test_a_forced_config_or_a_key_added_elsewhere_forgets_direct_launches() -> None:
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    launches(grid, ("x", 256), {})
    kernel.configs = [LARGE]  # as the tuner's forced_config does
    launches(grid, ("x", 256), {})
    kernel.configs = [SMALL, LARGE]
    launches(grid, ("x", 256), {})
    kernel.cache["elsewhere"] = LARGE
    launches(grid, ("x", 256), {})
    assert [entry[0] for entry in kernel.log] == ["triton", "triton", "triton", "triton"]


def test_each_config_the_tuner_forces_in_turn_is_the_one_launched() -> None:
    """As the tuner times configs: each forced list replaces the last, which is dropped (its id free for
    the next list), and every launch runs the config forced at that moment."""
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    for config in (SMALL, LARGE, SMALL, LARGE):
        kernel.configs = [config]  # a fresh list, as forced_config makes
        kernel.best_config = config  # as Autotuner.run sets for a single config
        launches(grid, ("x", 256), {})
        launches(grid, ("x", 256), {})
        assert kernel.log[-2][0] == "triton"
        assert kernel.log[-1] == (
            "direct",
            (256 // config.kwargs["BLOCK"], 1, 1),
            ("x", 256, config.kwargs["BLOCK"]),
        )


def test_while_suspended_for_a_probe_every_launch_goes_through_triton() -> None:
    """probe_launch intercepts launches in Triton's Autotuner.run: a direct launch would run the kernel."""
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    launches(grid, ("x", 256), {})
    with suspended():
        launches(grid, ("x", 256), {})
    launches(grid, ("x", 256), {})
    assert [entry[0] for entry in kernel.log] == ["triton", "triton", "direct"]


def test_a_kernel_under_heuristics_always_launches_through_triton() -> None:
    kernel = FakeAutotuner(Heuristics())
    launches = launches_of(kernel)
    for _ in range(3):
        launches(grid, ("x", 256), {})
    assert [entry[0] for entry in kernel.log] == ["triton", "triton", "triton"]


def test_the_configs_pre_hook_runs_before_each_direct_launch() -> None:
    seen: list[dict[str, Any]] = []
    kernel = FakeAutotuner()
    kernel.best_config = triton.Config({"BLOCK": 32}, pre_hook=seen.append)
    launches = launches_of(kernel)
    launches(grid, ("x", 256), {})  # through Triton, which runs the hook itself (not this fake)
    launches(grid, ("x", 256), {})
    assert len(seen) == 1 and seen[0]["x"] == "x" and seen[0]["BLOCK"] == 32 and seen[0]["num_warps"] == 4
    assert kernel.log[-1][0] == "direct"


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ((1,), (True,)),  # Triton types a bool as i1, an int as i32
        ((1,), (1.0,)),
        ((16,), (17,)),
        ((2**31,), (2**31 - 1,)),  # i64 against i32
        (("float16",), ("bfloat16",)),
    ],
)
def test_arguments_that_triton_could_specialize_apart_are_different_specializations(
    one: tuple[object, ...], other: tuple[object, ...]
) -> None:
    assert specialization(one, {}) != specialization(other, {})
    assert specialization((), {"DTYPE": one[0]}) != specialization((), {"DTYPE": other[0]})


@pytest.mark.parametrize(
    "args",
    [
        (torch.zeros(4),),  # the interpreter's CPU tensors
        (torch.empty(4, device="meta"),),  # a probe's
        (object(),),  # a kind read nowhere here
        ([1, 2],),
    ],
)
def test_launches_with_arguments_not_read_here_have_no_specialization(args: tuple[object, ...]) -> None:
    assert specialization(args, {}) is None
    kernel = FakeAutotuner()
    launches = launches_of(kernel)
    launches(grid, (*args, 256), {})
    launches(grid, (*args, 256), {})
    assert [entry[0] for entry in kernel.log] == ["triton", "triton"]
