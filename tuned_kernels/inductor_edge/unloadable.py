"""A graph file a bundle placed that Inductor then cannot load (damaged, its digest made to match: the
bundle's own checks pass) is said once, as ours, instead of Inductor's traceback; Inductor compiles the
graph as it would without it.

- Inductor's record of a file it could not unpickle (`GuardedCache.iterate_over_candidates` logs it with
  its traceback, FX-graph and AOTAutograd entries alike) is dropped when the file is one a bundle placed,
  and one line per bundle names the file and the bundle instead. The user's own files are logged as ever.
- The `AttributeError` Python prints from `CompiledFxGraph.__del__` of an entry whose unpickling stopped
  half-way (its `__init__` never ran: nothing to free) is not printed.
- The code of a graph that unpickled but does not load (`CompiledFxGraph.after_deserialization`: a syntax
  or import error in damaged source) is a cache miss, as a missing file already is, instead of an error
  that ends the program; said once, and the code it wrote taken out.

Each of these looks up torch's names; a torch without one leaves that part as torch does it (the last said
once, `shapes.INDUCTOR_GRAPH_LOAD`)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import sys
from collections.abc import Callable
from types import ModuleType, TracebackType
from typing import Any

from tuned_kernels import internals
from tuned_kernels.inductor_edge import shapes

LOGGER = "torch._inductor.codecache"
UNLOADABLE = "fx graph cache unable to load compiled graph"

Ours = Callable[[str], "str | None"]  # a file's absolute path -> the bundle that placed it (None: not ours)
Say = Callable[[str], None]


def watch(ours: Ours, say: Say) -> None:
    """Says, through `say`, each file of `ours` that Inductor cannot load, once, in place of Inductor's
    traceback; later calls replace `ours` and `say`."""
    if _watching:
        _watching[0].ours, _watching[0].say = ours, say
        _watching[0].said.clear()  # a new registry is told afresh
        return
    watcher = _OurUnloadableFiles(ours, say)
    _watching.append(watcher)
    logging.getLogger(LOGGER).addFilter(watcher)
    sys.unraisablehook = functools.partial(_unless_half_built, sys.unraisablehook)
    from tuned_kernels.post_import import when_imported

    when_imported("torch._inductor.output_code", _code_failing_as_miss)


def stop_watching() -> None:
    """No file is ours any more: Inductor's failed loads are logged as torch logs them."""
    if _watching:
        _watching[0].ours = _none_ours


def _none_ours(path: str) -> str | None:
    return None


class _OurUnloadableFiles(logging.Filter):
    def __init__(self, ours: Ours, say: Say) -> None:
        super().__init__()
        self.ours, self.say = ours, say
        self.said: set[str] = set()  # the bundles said (one line each) and "code" once said

    def filter(self, record: logging.LogRecord) -> bool:
        path = _failed_file(record)
        bundle = self.ours(path) if path is not None else None
        if path is None or bundle is None:
            return True  # not a failed load, or the user's own file: Inductor says it as ever
        error = record.exc_info[1] if record.exc_info else None
        shown = "/".join(path.split(os.sep)[-4:])
        self.once(
            bundle,
            f"compiled graph {shown} from {bundle}: Inductor cannot load it "
            f"({type(error).__name__}: {str(error)[:120]}); Inductor compiles its graphs",
        )
        return False

    def once(self, topic: str, message: str) -> None:
        if topic not in self.said:
            self.said.add(topic)
            with contextlib.suppress(Exception):  # a warning made an error (-W error): still no traceback
                self.say(message)


_watching: list[_OurUnloadableFiles] = []


def _failed_file(record: logging.LogRecord) -> str | None:
    """The file a record of Inductor's failed load names (its lookup's `subdir` and `path`), or None."""
    if record.msg != UNLOADABLE or not record.exc_info or record.exc_info[2] is None:
        return None
    frame = record.exc_info[2].tb_frame  # the lookup that caught the error
    subdir, name = frame.f_locals.get("subdir"), frame.f_locals.get("path")
    if not isinstance(subdir, str) or not isinstance(name, str):
        return None
    return os.path.join(subdir, name)


def _unless_half_built(previous: Callable[[Any], None], unraisable: Any) -> None:
    if not _half_built_graph(unraisable):
        previous(unraisable)


def _half_built_graph(unraisable: Any) -> bool:
    """An `AttributeError` from `CompiledFxGraph.__del__` of an object unpickling left without its state."""
    if not isinstance(unraisable.exc_value, AttributeError):
        return False
    if getattr(unraisable.object, "__qualname__", "") != "CompiledFxGraph.__del__":
        return False
    traceback: TracebackType | None = unraisable.exc_traceback
    graph = traceback.tb_frame.f_locals.get("self") if traceback is not None else None
    return graph is not None and "compiled_fn_runner" not in getattr(graph, "__dict__", {"": None})


def _code_failing_as_miss(module: ModuleType) -> None:
    if not internals.holds(shapes.INDUCTOR_GRAPH_LOAD):
        return
    graph_class: Any = module.CompiledFxGraph
    original = graph_class.after_deserialization
    if getattr(original, "tuned_kernels_watched", False):
        return

    @functools.wraps(original)
    def loaded(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except (SyntaxError, ImportError, NameError, RuntimeError) as exc:
            watching = _watching[0].ours is not _none_ours
            if not watching or (
                isinstance(exc, RuntimeError) and not str(exc).startswith("Failed to import")
            ):
                raise  # not serving, or not code that fails to load: as Inductor does it
            place = _code_place(self)
            if place is not None:
                _take_out(place, self.source_code)
            _watching[0].once(
                "code",
                f"a cached compiled graph's code does not load ({type(exc).__name__}: {str(exc)[:120]}); "
                "Inductor compiles its graphs",
            )
            raise OSError(f"cached graph code does not load: {exc}") from exc  # Inductor's miss: it compiles

    loaded.tuned_kernels_watched = True  # type: ignore[attr-defined]
    graph_class.after_deserialization = loaded


def _code_place(graph: Any) -> str | None:
    """Where Inductor writes a cached graph's code before loading it (None: this torch says otherwise)."""
    try:
        from torch._inductor.codecache import get_path

        return str(get_path(graph.cache_key, "py")[2])
    except Exception:
        return None


def _take_out(place: str, damaged: str) -> None:
    """The damaged code at its place, taken out (Inductor, compiling the graph itself, would find it there
    under the same name, which is its correct code's hash, and load it again): moved aside first, so that a
    file another process has written there meanwhile, with other code, is put back instead."""
    aside = f"{place}.{os.getpid()}.damaged"
    try:
        os.rename(place, aside)
    except OSError:
        return
    with contextlib.suppress(OSError):
        with open(aside, encoding="utf-8") as moved:
            ours = moved.read() == damaged
        if ours:
            os.remove(aside)
        else:
            os.rename(aside, place)
