"""Driving an `@triton.autotune` kernel through its op: learn the tuning key of a launch, and force a config.

Both work on the Autotuner instance, so the op's own Python (grid lambdas, argument checks) runs unchanged.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from tuned_kernels import model
from tuned_kernels.triton_edge import direct_launch
from tuned_kernels.triton_edge.keys import Tunable, autotuner_class, tuning_key


class _Probed(Exception):
    def __init__(self, named_args: dict[str, Any]) -> None:
        self.named_args = named_args


class LaunchesAnother(Exception):
    """The op launches another autotuned kernel for these arguments on this device (an op with a kernel
    per shape or per GPU, as triton_matmul): this kernel has nothing to tune or compile for them here."""

    def __init__(self, kernel: str, launched: str) -> None:
        super().__init__(f"{kernel}: the op launches {launched} here instead")
        self.launched = launched  # the other kernel's function name


def probe_launch(kernel: Tunable, launch: Callable[[], object]) -> dict[str, Any]:
    """The named arguments `launch` passes to `kernel`, captured without running it; raises
    `LaunchesAnother` when the op reaches another autotuned kernel first (which does not run either)."""

    def record(*args: Any, **kwargs: Any) -> None:
        kwargs.pop("grid", None)
        kwargs.pop("warmup", None)
        raise _Probed({**dict(zip(kernel.arg_names, args, strict=False)), **kwargs})

    def another(self: Any, *args: Any, **kwargs: Any) -> None:
        raise LaunchesAnother(kernel_name(kernel), kernel_name(self))

    autotuner = autotuner_class()
    original = autotuner.run
    kernel.run, autotuner.run = record, another  # type: ignore[method-assign]  # one instance, for the probe
    try:
        with direct_launch.suspended():  # launches through Triton, where they are intercepted
            launch()
    except _Probed as probed:
        return probed.named_args
    finally:
        del kernel.run
        autotuner.run = original
    raise RuntimeError(f"{kernel_name(kernel)}: the op did not launch its kernel")


def probe_key(kernel: Tunable, launch: Callable[[], object]) -> tuple[model.TuningKey, dict[str, Any]]:
    named = probe_launch(kernel, launch)
    return tuning_key(kernel, named), named


def config_space(kernel: Tunable, named_args: dict[str, Any]) -> list[Any]:
    """The autotuner's configs after its own pruning for these arguments (as `Autotuner.run` would prune)."""
    kernel.nargs = {k: v for k, v in named_args.items() if k in kernel.arg_names}
    try:
        extra = {k: v for k, v in named_args.items() if k not in kernel.arg_names}
        return list(kernel.prune_configs(extra))
    finally:
        kernel.nargs = None


@contextlib.contextmanager
def forced_config(kernel: Tunable, config: Any) -> Iterator[None]:
    """Launches of `kernel` use `config` (a single-config autotuner neither benchmarks nor caches)."""
    saved = kernel.configs
    kernel.configs = [config]
    try:
        yield
    finally:
        kernel.configs = saved


def kernel_name(kernel: Tunable) -> str:
    from tuned_kernels.triton_edge.keys import base_function

    return str(base_function(kernel).__name__)
