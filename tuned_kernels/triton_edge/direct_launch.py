"""Launching an autotuned kernel's compiled winner directly, after its first launch.

On a slow host CPU, Triton 3.6's `Autotuner.run` and `JITFunction.run` take 30-90 us per launch (binding and
specializing every argument, the tuning key, cache look-ups, the grid), longer than a decode-sized matmul runs
on the GPU, while the compiled kernel's own launcher takes about 17 us. An op launches through `launch`: the
first launch of each specialization goes through Triton as always (served or tuned, compiled, guarded) and
returns the `CompiledKernel` it ran; later launches with the same specialization call that kernel's launcher
with the same config (the grid is asked again each launch, as Triton asks it: it may read values that are not
arguments, such as a batch size).

The specialization here is finer than Triton's: tensors by dtype and 16-byte alignment, tensor descriptors by
their base's dtype and alignment, shape, strides and block shape, everything else by value. So a direct
launch runs the kernel Triton would have run. Whatever this cannot read launches through Triton every time:
an argument of another kind, tensors off the GPU (a probe's `meta` tensors, the interpreter's CPU ones), a
kernel under `@triton.heuristics` or with pre-run hooks, and any launch inside a probe (`suspended`). A change
of the autotuner's configs (the tuner forcing one) or of its cache forgets every direct launch. Triton's knobs
(debug, launch hooks aside, which are read per launch) count as they were at a specialization's first launch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, NamedTuple

import torch

from tuned_kernels import fallbacks

LIMIT = 4096  # direct launches kept per kernel (distinct specializations); past it they are forgotten
_PLAIN = (int, float, bool, str, type(None))


class _Direct(NamedTuple):
    compiled: Any  # the CompiledKernel Triton launched first; `compiled[grid]` is its launcher
    tail: tuple[Any, ...]  # the arguments after the positional ones (constexprs), in the kernel's order
    pre_hook: Callable[[dict[str, Any]], object] | None  # the config's own, run before each launch
    names: tuple[str, ...]  # the kernel's parameter names
    options: dict[str, Any]  # the constexprs and the config's options, for the pre-hook and the grid


_THROUGH_TRITON = object()  # a specialization that always launches through Triton
_suspended = 0  # inside `suspended()`: every launch goes through Triton


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Within this block every launch goes through Triton, where a probe intercepts it (`Autotuner.run`
    replaced on the kernel or its class): a direct launch would run the kernel instead."""
    global _suspended
    _suspended += 1
    try:
        yield
    finally:
        _suspended -= 1


def specialization(args: Sequence[object], constexprs: dict[str, object]) -> tuple[object, ...] | None:
    """What a direct launch is looked up by: everything Triton specializes on and more, flat (each argument
    by its kind and then its facts); None where an argument is of a kind read nowhere here, or a tensor is
    not on a GPU. On the hot path of every launch, so written for speed."""
    parts: list[object] = []
    add = parts.append
    for arg in args:
        kind = type(arg)
        if kind is int or kind is float or kind is str or kind is bool or arg is None:
            add(kind)
            add(arg)
        elif isinstance(arg, torch.Tensor):
            if not arg.is_cuda:
                return None
            add(arg.dtype)
            add(arg.data_ptr() & 15 == 0)
        elif kind.__name__ == "TensorDescriptor":
            described = _descriptor(arg)
            if described is None:
                return None
            add(described)
        else:
            return None
    for name, value in constexprs.items():
        if not isinstance(value, _PLAIN):
            return None
        add(name)
        add(type(value))
        add(value)
    return tuple(parts)


def _descriptor(desc: Any) -> Hashable | None:
    base = desc.base
    if not isinstance(base, torch.Tensor) or not base.is_cuda:
        return None
    layout = (tuple(desc.shape), tuple(desc.strides), tuple(desc.block_shape))
    return ("desc", base.dtype, base.data_ptr() & 15 == 0, *layout, desc.padding)


class DirectLaunches:
    """The direct launches of one autotuned kernel, by specialization and current device."""

    def __init__(self, kernel: Any, current_device: Callable[[], object] | None = None) -> None:
        self.kernel = kernel  # an @triton.autotune kernel
        self.launches: dict[Hashable, Any] = {}
        # the configs and cache the direct launches were made under: held, not their ids (a list the tuner
        # forced and dropped could leave its id to the next one)
        self.state: tuple[object, object, int] = (None, None, 0)
        self.current_device = current_device  # default: the active Triton driver's, as its launches use

    def __call__(self, grid: Any, args: Sequence[object], constexprs: dict[str, object]) -> None:
        found = None if _suspended else specialization(args, constexprs)
        if found is None:
            self.kernel[grid](*args, **constexprs)
            return
        if self.current_device is None:
            from triton.runtime import driver

            self.current_device = driver.active.get_current_device
        key = (self.current_device(), found)
        if not self._unchanged():  # configs forced or keys added elsewhere: start over
            self.launches.clear()
        direct = self.launches.get(key)
        if direct is None:
            compiled = self.kernel[grid](*args, **constexprs)
            if len(self.launches) >= LIMIT:
                self.launches.clear()
            self.launches[key] = _direct_for(self.kernel, compiled, grid, args, constexprs)
            self.state = self._state()
        elif direct is _THROUGH_TRITON:
            self.kernel[grid](*args, **constexprs)
        else:
            shape = grid
            if callable(grid) or direct.pre_hook is not None:
                # the grid asked each launch, as Triton does: it may read more than the arguments
                named = {**dict(zip(direct.names, args, strict=False)), **direct.options}
                if direct.pre_hook is not None:
                    direct.pre_hook(named)
                shape = grid(named) if callable(grid) else grid
            direct.compiled[(*shape, 1, 1)[:3]](*args, *direct.tail)

    def _state(self) -> tuple[object, object, int]:
        return self.kernel.configs, self.kernel.cache, len(self.kernel.cache)

    def _unchanged(self) -> bool:
        configs, cache, keys = self.state
        return (
            len(self.kernel.cache) == keys and self.kernel.configs is configs and self.kernel.cache is cache
        )


def _direct_for(
    kernel: Any, compiled: Any, grid: Any, args: Sequence[object], constexprs: dict[str, Any]
) -> Any:
    """How later launches of this specialization run `compiled` (the kernel Triton just launched with the
    autotuner's `best_config`), or `_THROUGH_TRITON` where that cannot be read."""
    fn = kernel.fn
    if type(fn).__name__ != "JITFunction" or getattr(fn, "pre_run_hooks", None):
        return _THROUGH_TRITON  # heuristics decide constexprs per launch; pre-run hooks must run
    try:
        config = kernel.best_config
        names = tuple(fn.arg_names)
        if list(compiled.src.signature) != list(names) or len(args) > len(names):
            return _THROUGH_TRITON
        named = {**dict(zip(names, args, strict=False)), **constexprs, **config.kwargs}
        tail = tuple(named[name] for name in names[len(args) :])
        options = {**constexprs, **config.all_kwargs()}
        return _Direct(compiled, tail, config.pre_hook, names, options)
    except Exception:  # anything unexpected in Triton's objects: launch through Triton
        fallbacks.count("direct_launch")
        return _THROUGH_TRITON


def launch(kernel: Any, grid: Any, *args: object, **constexprs: object) -> None:
    """`kernel[grid](*args, **constexprs)`, directly after the first launch of a specialization."""
    launches = kernel.__dict__.get("_tuned_kernels_direct")
    if launches is None:
        launches = kernel._tuned_kernels_direct = DirectLaunches(kernel)
    launches(grid, args, constexprs)


def current_stream(device_index: int) -> int:
    """The raw handle of the current stream of GPU `device_index`, as Triton's launcher reads it (cheaper
    than `torch.cuda.current_stream`, which builds a Python object: this is on the launch path)."""
    from triton.runtime import driver

    return int(driver.active.get_current_stream(device_index))
