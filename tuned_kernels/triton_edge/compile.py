"""The edge where compiled kernels meet Triton: compile a launch without running it, for this GPU or for
one that is not here, and turn what Triton compiled into artifacts.

A compile goes through Triton's own `JITFunction.warmup`, which binds the launch arguments, specializes
them (pointer alignment, integer divisibility) and computes the cache key exactly as a real launch does; so
an artifact compiled here is found by the run-time launch it stands for.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from tuned_kernels import model, residency
from tuned_kernels.triton_edge.cache_manager import compiled_kernel, host_signature
from tuned_kernels.triton_edge.keys import config_from_triton, config_to_triton, jit_function

LAUNCH_ONLY = ("grid", "warmup")  # what a launch passes `Autotuner.run` beside the kernel's arguments


def is_compiled_kernel(autotuner: Any) -> bool:
    """Whether a Triton compiler sits under this autotuner (not an implementation choice, not the
    interpreter)."""
    return type(jit_function(autotuner)).__name__ == "JITFunction"


def warmup(autotuner: Any, named_args: Mapping[str, Any], config: model.Config) -> Any:
    """Compiles the kernel that a launch with these arguments and `config` runs, without launching it,
    and returns Triton's `CompiledKernel` (from Triton's caches when already compiled). The kernel's
    `@triton.heuristics` are applied as a launch would apply them. The launch's arguments are not changed:
    a config's pre-hook sets its tiles on copies of the host-side tensor descriptors, so compiles of other
    configs on other threads each see their own."""
    kwargs = {k: _own_copy(v) for k, v in named_args.items() if k not in LAUNCH_ONLY}
    own = next((c for c in getattr(autotuner, "configs", ()) if config_from_triton(c) == config), None)
    if own is not None and own.pre_hook is not None:  # the winner's own hook sets what its compile sees
        own.pre_hook({**kwargs, **own.all_kwargs()})
    kwargs.update(config_to_triton(config).all_kwargs())
    fn = autotuner.fn
    while type(fn).__name__ != "JITFunction":
        if not hasattr(fn, "fn"):
            raise TypeError(f"{type(fn).__name__} is not a compiled Triton kernel (is TRITON_INTERPRET set?)")
        for name, heuristic in getattr(fn, "values", {}).items():
            kwargs[name] = heuristic(kwargs)
        fn = fn.fn
    return fn.warmup(grid=(1,), **kwargs)


def resident_of(
    autotuner: Any, named_args: Mapping[str, Any], configs: Iterable[model.Config]
) -> dict[model.Config, int]:
    """`resident_programs` of each config, where a Triton compiler sits under the autotuner (none under
    the interpreter or for an implementation choice)."""
    if not is_compiled_kernel(autotuner):
        return {}
    return {c: resident_programs(autotuner, named_args, c) for c in configs}


def resident_programs(autotuner: Any, named_args: Mapping[str, Any], config: model.Config) -> int:
    """Programs of `config`'s compiled kernel that one multiprocessor of this GPU holds at once, from its
    registers, shared memory and warps (0: not known: no GPU, an AMD GPU, whose wavefronts and register
    files this does not model, a kernel that does not compile here, a Triton or torch that does not say)."""
    try:
        import torch

        if torch.version.hip:
            return 0
        kernel = warmup(autotuner, named_args, config)
        kernel._init_handles()  # loads the module: its register count is known from then on
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        mp = residency.Multiprocessor.of(
            (props.major, props.minor),
            threads=props.max_threads_per_multi_processor,
            registers=getattr(props, "regs_per_multiprocessor", 65536),  # every NVIDIA GPU since Kepler
            shared_bytes=props.shared_memory_per_multiprocessor,
        )
        return residency.resident(mp, kernel.metadata.num_warps, kernel.n_regs, kernel.metadata.shared)
    except Exception:  # a figure for predictions only: none is as good as a wrong one
        return 0


def _own_copy(value: Any) -> Any:
    from triton.tools.tensor_descriptor import TensorDescriptor

    return copy.copy(value) if isinstance(value, TensorDescriptor) else value


def make_driver() -> bool:
    """Triton's active driver made in this thread, where it can be (False: none can, no GPU here): Triton
    makes it at its first use without a lock, so threads compiling at once would each make one, each
    building its host utilities (a C build)."""
    from triton.runtime.driver import driver

    try:
        driver.active  # noqa: B018 - made on first access
    except Exception:
        return False
    return True


def artifact_of(compiled: Any, config: model.Config) -> tuple[model.Artifact, dict[str, bytes]]:
    """The files Triton needs to load `compiled` (metadata and binary), hashed, with their bytes; `config`
    is the launch config it was compiled with."""
    found = compiled_kernel(dict(compiled.metadata_group), host_signature(compiled.src))
    if found is None:
        raise ValueError(f"{compiled.name}: Triton's cache holds no metadata and binary for it")
    artifact, blobs, _ = found
    return dataclasses.replace(artifact, config=config), blobs


class _OfflineDriver:
    """Answers the questions a kernel's `warmup` asks of the GPU driver, for a GPU that is not here."""

    def __init__(self, gpu_target: Any) -> None:
        self.target = gpu_target

    def get_current_device(self) -> str:
        # a device id of its own per target: JITFunction caches its binder and backend per device
        return f"tuned-kernels-offline:{self.target.backend}:{self.target.arch}"

    def get_current_stream(self, device: Any = None) -> int:
        return 0

    def get_current_target(self) -> Any:
        return self.target

    def is_active(self) -> bool:
        return True


@contextlib.contextmanager
def compiling_for(gpu_target: Any) -> Iterator[None]:
    """Within this block, Triton compiles for `gpu_target` (a `GPUTarget`), whatever GPU is (not) here."""
    from triton.runtime.driver import driver

    saved = driver._active
    driver.set_active(_OfflineDriver(gpu_target))
    try:
        yield
    finally:
        driver._active = saved
