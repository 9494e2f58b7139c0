"""Inductor's work a bundle should have spared it, watched at Inductor's edge: compiling a graph it did not
find in its caches, benchmarking a generated kernel's configs, running coordinate descent.
`TUNED_KERNELS_STRICT=1` stops the program there with one line (`stop`); otherwise a graph compiled while the
bundles offered graphs is said once (`notice`), and Inductor goes on. Each wrapped method is looked up by
name: a torch that lacks one is said once and that kind of work is not watched."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any, NoReturn

from tuned_kernels.errors import warn

Stop = Callable[[str], NoReturn]
Notice = Callable[[str], None]  # told what Inductor is doing, before it does it

# (module, class, method, what doing it means)
COMPILING_A_GRAPH = (
    "torch._inductor.compile_fx",
    "_InProcessFxCompile",
    "codegen_and_compile",
    "compiling a graph",
)
WATCHED = (
    COMPILING_A_GRAPH,
    ("torch._inductor.runtime.triton_heuristics", "CachingAutotuner", "benchmark_all_configs",
     "benchmarking the configs of a generated kernel"),
    ("torch._inductor.runtime.coordinate_descent_tuner", "CoordescTuner", "autotune",
     "running coordinate descent on a generated kernel"),
)  # fmt: skip


def install(stop: Stop) -> None:
    """Stops the program where Inductor would do any watched work (once each module is imported: Inductor
    imports them lazily)."""
    for watched in WATCHED:
        _when_imported(watched, lambda original, doing: _stopping(original, doing, stop))


def notice_graph_compiles(notice: Notice) -> None:
    """Tells `notice` before each graph Inductor compiles, and lets it compile."""
    _when_imported(COMPILING_A_GRAPH, lambda original, doing: _telling(original, doing, notice))


def _when_imported(
    watched: tuple[str, str, str, str], wrap: Callable[[Callable[..., Any], str], Callable[..., Any]]
) -> None:
    from tuned_kernels.post_import import when_imported

    module_name, class_name, method, doing = watched
    when_imported(module_name, functools.partial(_watch, class_name, method, doing, wrap))


def _watch(
    class_name: str,
    method: str,
    doing: str,
    wrap: Callable[[Callable[..., Any], str], Callable[..., Any]],
    module: ModuleType,
) -> None:
    original = getattr(getattr(module, class_name, None), method, None)
    if original is None:
        warn(f"this torch has no {class_name}.{method}; {doing} is not watched")
    elif not getattr(original, "tuned_kernels_watched", False):
        setattr(getattr(module, class_name), method, wrap(original, doing))


def _stopping(original: Callable[..., Any], doing: str, stop: Stop) -> Callable[..., Any]:
    @functools.wraps(original)
    def instead(self: Any, *args: Any, **kwargs: Any) -> Any:
        stop(f"Inductor is {doing} ({_name(self)}): the bundles do not hold it")

    instead.tuned_kernels_watched = True  # type: ignore[attr-defined]
    return instead


def _telling(original: Callable[..., Any], doing: str, notice: Notice) -> Callable[..., Any]:
    @functools.wraps(original)
    def told(self: Any, *args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(Exception):  # a warning made an error (-W error): the compile goes on
            notice(f"Inductor is {doing}")
        return original(self, *args, **kwargs)

    told.tuned_kernels_watched = True  # type: ignore[attr-defined]
    return told


def _name(obj: Any) -> str:
    fn = getattr(obj, "fn", None)  # a CachingAutotuner's kernel, a CoordescTuner's name
    return str(getattr(fn, "__name__", None) or getattr(obj, "name", None) or type(obj).__name__)[:120]
