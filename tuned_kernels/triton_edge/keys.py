"""The edge where the model meets Triton's `Autotuner`: kernel identity, tuning keys and configs.

`tuning_key` forms the key exactly as `Autotuner.run` does in Triton 3.6 to 3.9: the values of the `key=`
arguments, then `str(arg.dtype)` of every argument that has a dtype.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Mapping
from typing import Any, Protocol

from tuned_kernels import model
from tuned_kernels.source_identity import module_name, source_digest


class Tunable(Protocol):
    """What this edge reads and drives of a tunable kernel: Triton's `Autotuner`, or an object that stands
    for one where it matters (`choice.ImplementationChoice`)."""

    fn: Any  # the function under it (a JITFunction, heuristics around one, or the op's signature)
    arg_names: list[str]
    keys: list[str]  # the `key=` arguments
    configs: list[Any]  # triton.Config
    cache: dict[Any, Any]  # the config chosen per tuning key
    nargs: dict[str, Any] | None  # the named arguments of the launch being tuned

    def prune_configs(self, kwargs: dict[str, Any]) -> list[Any]: ...

    def run(self, *args: Any, **kwargs: Any) -> Any: ...


def autotuner_class() -> Any:
    """Triton's `Autotuner` (imported when first asked: importing Triton is slow)."""
    from triton.runtime.autotuner import Autotuner

    return Autotuner


def base_function(autotuner: Tunable) -> Any:
    fn = autotuner.fn
    while not inspect.isfunction(fn):
        fn = fn.fn
    return fn


def jit_function(autotuner: Tunable) -> Any:
    """The JITFunction (or InterpretedFunction) under any stack of heuristics."""
    fn = autotuner.fn
    while type(fn).__name__ not in ("JITFunction", "InterpretedFunction") and hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def kernel_identity(autotuner: Tunable) -> model.KernelIdentity:
    """Its name (the module as imported, even for the script being run) and a digest of what decides its
    behaviour, position and formatting left out (source_identity.py); its `previous` identity is the older
    scheme's (the name as Python gave it, Triton's `cache_key` or a hash of the source text), which files
    made before name kernels by."""
    cached = getattr(autotuner, "_tuned_kernels_identity", None)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    fn = base_function(autotuner)
    params = tuple(autotuner.arg_names)
    cache_key = getattr(jit_function(autotuner), "cache_key", None)
    if not isinstance(cache_key, str) or len(cache_key) != 64:
        cache_key = hashlib.sha256(inspect.getsource(fn).encode("utf-8")).hexdigest()
    previous = model.KernelIdentity(
        f"{fn.__module__}.{fn.__qualname__}", cache_key, params, model.IdentityScheme.TRITON_CACHE_KEY
    )
    identity = model.KernelIdentity(
        f"{module_name(fn)}.{fn.__qualname__}", source_digest(fn), params, previous=previous
    )
    autotuner._tuned_kernels_identity = identity  # type: ignore[attr-defined]  # computed once per kernel
    return identity


def scalar(value: Any) -> model.Scalar:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    inner = getattr(value, "value", None)  # tl.constexpr
    if inner is not None and isinstance(inner, (bool, int, float, str)):
        return inner  # type: ignore[no-any-return,unused-ignore]
    return str(value)


def key_names(autotuner: Tunable, named_args: Mapping[str, Any]) -> list[str]:
    """The names of the key's leading elements, as `tuning_key` builds it from these arguments (a key
    argument the launch leaves to its default is not in the key, as in Triton's own)."""
    args = {k for k in named_args if k in autotuner.arg_names}
    return [str(name) for name in autotuner.keys if name in args]


def launches_persistent(autotuner: Tunable) -> bool:
    """Whether the kernel reads how many programs were launched (a grid-stride loop: a program per
    multiprocessor, each taking tile after tile), so more resident programs do not shorten its rounds."""
    return "num_programs" in str(getattr(jit_function(autotuner), "src", ""))


def tuning_key(autotuner: Tunable, named_args: Mapping[str, Any]) -> model.TuningKey:
    args = {k: v for k, v in named_args.items() if k in autotuner.arg_names}
    key = [scalar(args[name]) for name in key_names(autotuner, args)]
    key += [str(arg.dtype) for arg in args.values() if hasattr(arg, "dtype")]
    return tuple(key)


def config_from_triton(config: Any) -> model.Config:
    return model.Config.of(
        {k: scalar(v) for k, v in config.kwargs.items()},
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        num_ctas=getattr(config, "num_ctas", 1) or 1,
        maxnreg=getattr(config, "maxnreg", None),
    )


def config_to_triton(config: model.Config) -> Any:
    import triton

    extra = {"maxnreg": config.maxnreg} if config.maxnreg is not None else {}
    return triton.Config(
        dict(config.kwargs),
        num_warps=config.num_warps,
        num_stages=config.num_stages,
        num_ctas=config.num_ctas,
        **extra,
    )


def kernel_space(autotuner: Tunable, kwargs: Mapping[str, Any]) -> list[Any]:
    """The configs this launch could use: the kernel's own, after its `prune_configs_by` early pruning
    (not its performance model, which only ranks). Reads `autotuner.nargs`, as `prune_configs` does."""
    configs = list(autotuner.configs)
    prune = getattr(autotuner, "early_config_prune", None)
    if prune is not None and len(configs) > 1:
        configs = list(prune(configs, autotuner.nargs, **kwargs))
    return configs
