"""`TUNED_KERNELS_STRICT=1` at Inductor's edge: where Inductor is about to do the work a bundle should have
spared it (compile a graph it did not find in its caches, benchmark a generated kernel's configs, run
coordinate descent), the program stops with one line instead. Each wrapped method is looked up by name: a
torch that lacks one is said once and that kind of work is not watched."""

from __future__ import annotations

import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from tuned_kernels.errors import warn

Stop = Callable[[str], NoReturn]

# (module, class, method, what doing it means)
WATCHED = (
    ("torch._inductor.compile_fx", "_InProcessFxCompile", "codegen_and_compile", "compiling a graph"),
    ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner", "benchmark_all_configs",
     "benchmarking the configs of a generated kernel"),
    ("torch._inductor.runtime.coordinate_descent_tuner", "CoordescTuner", "autotune",
     "running coordinate descent on a generated kernel"),
)  # fmt: skip


def install(stop: Stop) -> None:
    """Watches each method once its module is imported (Inductor imports them lazily)."""
    from tuned_kernels.post_import import when_imported

    for module_name, class_name, method, doing in WATCHED:
        when_imported(module_name, functools.partial(_watch, class_name, method, doing, stop))


def _watch(class_name: str, method: str, doing: str, stop: Stop, module: ModuleType) -> None:
    original = getattr(getattr(module, class_name, None), method, None)
    if original is None:
        warn(f"TUNED_KERNELS_STRICT: this torch has no {class_name}.{method}; {doing} is not watched")
    elif not getattr(original, "tuned_kernels_strict", False):
        setattr(getattr(module, class_name), method, _stopping(original, doing, stop))


def _stopping(original: Callable[..., Any], doing: str, stop: Stop) -> Callable[..., Any]:
    @functools.wraps(original)
    def instead(self: Any, *args: Any, **kwargs: Any) -> Any:
        stop(f"Inductor is {doing} ({_name(self)}): the bundles do not hold it")

    instead.tuned_kernels_strict = True  # type: ignore[attr-defined]
    return instead


def _name(obj: Any) -> str:
    fn = getattr(obj, "fn", None)  # a CachingAutotuner's kernel, a CoordescTuner's name
    return str(getattr(fn, "__name__", None) or getattr(obj, "name", None) or type(obj).__name__)[:120]
