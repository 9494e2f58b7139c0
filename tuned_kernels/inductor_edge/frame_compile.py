"""A saved frame's ahead-of-time compile (frame_capture.py) through Inductor's FX-graph cache, as the
program's own compile goes. torch compiles a frame it saves afresh, reading no cache, and a fresh compile
names its kernels otherwise than the program's compile did (max-autotune times its GEMM choices again, and
the kernels it generates while doing so take suffixes: `..._view_2` for the program's `..._view_3`). A
loaded frame's kernels then find none of the configs the program's run tuned, and Inductor tunes them again
at the first call (H200, torch 2.11, a decoder under max-autotune: 4 coordinate-descent runs and 29 GPU
benchmarks). Here each of the frame's graphs is looked up under the key the program's own compile used:
found, the frame carries the program's own compiled graph, whose kernels the run tuned and the bundle
ships tuned; not found (a backward the program has not run yet), it is compiled and written to the cache
under that key, where the program's own compile of it finds it."""

from __future__ import annotations

import atexit
import contextlib
import copy
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Lookups:
    """What the frame's compile found in Inductor's cache: one mark per graph, forward or backward."""

    forward: list[bool] = field(default_factory=list)
    backward: list[bool] = field(default_factory=list)

    def why_not_saved(self) -> str | None:
        """Why the frame must not be saved: a forward graph not the program's own (its kernels, compiled
        afresh, would be tuned again at a served first call); None where each forward is."""
        if not self.forward:
            return "its compile made no graph Inductor's cache could hold"
        if not all(self.forward):
            return "its graph is not the one the program compiled (Inductor's cache did not hold it)"
        return None


@contextlib.contextmanager
def through_graph_cache() -> Iterator[Lookups | None]:
    """Within: a bundled compile (torch's ahead-of-time compile of a frame) finds each graph in Inductor's
    FX-graph cache under the program's key, or writes it there. None where this torch's compile is not laid
    out so (shapes.FRAME_COMPILE)."""
    from tuned_kernels.inductor_edge.shapes import FRAME_COMPILE
    from tuned_kernels.internals import holds

    if not all(holds(shape) for shape in FRAME_COMPILE):
        yield None
        return
    from torch._dynamo import convert_frame
    from torch._inductor import codecache, triton_bundler
    from torch._inductor import compile_fx as compile_module

    compile_fx: Any = compile_module  # the module whose compile function is swapped for the while
    cache: Any = codecache.FxGraphCache
    bundler: Any = triton_bundler.TritonBundler
    through = _ThroughCache(compile_fx.fx_codegen_and_compile, bundler.collect, cache)
    descriptors = vars(bundler)["collect"], vars(cache)["cache_hit_post_compile"]  # put back as they were
    # Dynamo's own lock on compiling: another thread's compile meanwhile would go through these too
    with getattr(convert_frame, "compile_lock", None) or contextlib.nullcontext():
        compile_fx.fx_codegen_and_compile = through.compiled
        bundler.collect = through.collected
        cache.cache_hit_post_compile = staticmethod(through.posted)
        try:
            yield through.lookups
        finally:
            compile_fx.fx_codegen_and_compile = through.fresh
            bundler.collect, cache.cache_hit_post_compile = descriptors


class _ThroughCache:
    """Inductor's compile, collect and cache-hit functions as a frame's compile goes through them: `fresh`
    and `collect` are Inductor's own, `cache` its FxGraphCache."""

    def __init__(self, fresh: Any, collect: Any, cache: Any) -> None:
        self.fresh, self.collect, self.cache = fresh, collect, cache
        self.post = cache.cache_hit_post_compile
        self.lookups = Lookups()
        self.bundles: list[Any] = []  # a graph's Triton kernels, for the compile's own collect to give back
        self.as_stored: list[Any] = []  # a found graph's Triton kernels before loading readied them

    def posted(self, graph: Any, *args: Any, **kwargs: Any) -> Any:
        self.as_stored.append(copy.deepcopy(getattr(graph, "_triton_bundle", None)))  # readied: no pickle
        return self.post(graph, *args, **kwargs)

    def collected(self, *args: Any, **kwargs: Any) -> Any:
        return (self.bundles.pop(), None) if self.bundles else self.collect(*args, **kwargs)

    def compiled(self, gm: Any, example_inputs: Any, inputs_to_check: Any, **graph_kwargs: Any) -> Any:
        import torch
        from torch._dynamo.utils import count_calls
        from torch._inductor import config as inductor

        backward = bool(graph_kwargs.get("is_backward", False))
        marks = self.lookups.backward if backward else self.lookups.forward
        if count_calls(gm.graph) == 0:  # nothing to compute: no kernel, and the program's compile caches none
            marks.append(True)
            return self.fresh(gm, example_inputs, inputs_to_check, **graph_kwargs)
        if inductor.force_disable_caches or not inductor.fx_graph_cache:  # the program caches no graph
            marks.append(False)
            return self.fresh(gm, example_inputs, inputs_to_check, **graph_kwargs)
        with torch._functorch.config.patch(bundled_autograd_cache=False):  # the program's key: no bundling
            key_info, _ = self.cache.prepare_key(gm, example_inputs, graph_kwargs, inputs_to_check, False)
        if key_info is None:  # a graph Inductor does not cache
            marks.append(False)
            return self.fresh(gm, example_inputs, inputs_to_check, **graph_kwargs)
        graph = self._found(gm, example_inputs, key_info, backward)
        marks.append(graph is not None)
        return graph or self._written(gm, example_inputs, inputs_to_check, graph_kwargs, key_info)

    def _found(self, gm: Any, example_inputs: Any, key_info: Any, backward: bool) -> Any:
        """The program's own compiled graph under its key, its Triton kernels as stored; None if absent."""
        from torch._inductor.output_code import CompiledFxGraphConstantsWithGm

        key, debug_lines = key_info
        self.as_stored.clear()
        graph, _ = self.cache.load_with_key(
            key, debug_lines, example_inputs, True, None, is_backward=backward,
            constants=CompiledFxGraphConstantsWithGm(gm),
        )  # fmt: skip
        if graph is not None:
            self.bundles.append(self.as_stored[-1] if self.as_stored else graph._triton_bundle)
        return graph

    def _written(
        self, gm: Any, example_inputs: Any, inputs_to_check: Any, graph_kwargs: Any, key_info: Any
    ) -> Any:
        """The graph compiled afresh and written to the cache under the program's key, as torch's miss."""
        from torch._inductor.output_code import CompiledFxGraph

        graph = self.fresh(gm, example_inputs, inputs_to_check, **graph_kwargs)
        if not isinstance(graph, CompiledFxGraph):  # another kind of output: as torch compiled it
            return graph
        key, debug_lines = key_info
        bundle, _ = self.collect()
        graph.set_triton_bundle(bundle)
        graph._fx_graph_cache_key, graph._fx_graph_cache_debug_lines = key, debug_lines
        self.cache._save_graph(key, graph, example_inputs, True, None)
        written_for_the_program(self.cache, key)
        self.bundles.append(bundle)
        return graph


# graphs a frame's compile wrote to Inductor's cache for the program's own compile, not looked up by it yet
_unread: dict[str, Path] = {}


def written_for_the_program(cache: Any, key: str) -> None:
    """Notes a graph written under `key` for the program's own compile (a backward it has not run yet).
    One it never looks up is taken out of the cache as the program ends, before capture harvests the
    cache: an inference program whose parameters require grad runs no backward, and its bundle would ship
    each frame's backward twice (the frame holds it). From the first such graph on, Inductor's look-ups
    are watched."""
    _watch_lookups(cache)
    _unread[key] = Path(cache._get_tmp_dir_for_key(key))


def _watch_lookups(cache: Any) -> None:
    lookup = cache.load_with_key
    if getattr(lookup, "watched", False):
        return

    def watched(key: str, *args: Any, **kwargs: Any) -> Any:
        _unread.pop(key, None)
        return lookup(key, *args, **kwargs)

    watched.watched = True  # type: ignore[attr-defined]
    cache.load_with_key = staticmethod(watched)
    atexit.register(_take_out_unread)


def _take_out_unread() -> None:
    for folder in _unread.values():
        shutil.rmtree(folder, ignore_errors=True)
    _unread.clear()
