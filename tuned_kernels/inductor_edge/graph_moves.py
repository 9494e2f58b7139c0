"""A graph Inductor compiled on one GPU, found on another of the machine: a capture on `cuda:0` served to a
program on `cuda:1`, each rank of a job served the graphs of one.

Inductor keys a compiled graph by the device index of its inputs (their metadata, and the FX graph's own
code where a factory op names `device(type='cuda', index=1)`), and writes the index into the code it
generates (device guards, streams, each kernel's device properties): a graph is found only on the GPU it
was compiled on (pytorch#196153). With tuned-kernels on:

- **Keys.** A graph whose inputs are all on one GPU, and whose FX code names no other, is keyed as if that
  GPU were `cuda:0` (on `cuda:0` nothing changes: bundles made before are found as ever). A graph naming
  several GPUs keeps Inductor's own key, and so do AOTAutograd entries that hold their graphs (a setting).
- **Loads.** A graph found that was compiled for another index is moved to the one its inputs are on as it
  loads: its code names the new index (the kernels' device properties among it, so each kernel loads its
  binary onto this GPU), its constants are copied there (unpickled onto the old index first), its Triton
  binaries go to this index's Triton cache folder, and Inductor's tuned configs for its kernels (named by
  each kernel's source, which now names the new index) are copied to the moved kernels' names, as are their
  reduction choices. Its statically launched kernels are left out: they load the usual way, from the Triton
  cache folder.
- Only the ways Inductor's Python wrapper names a device are rewritten (`device_index.MENTION`). A graph
  naming one otherwise (C++ wrapper code, ROCm's device properties, an index given as a bare integer, as in
  `x.to(1)`) keeps Inductor's own key; one found for another index whose kernels were compiled for another
  compute capability than this GPU's is not moved: a miss, said once, and Inductor compiles it as it would
  (Inductor's next look-up of that key passes over it to the graph it compiled here).

A graph cached by a run without tuned-kernels on `cuda:1` is keyed by index 1, so runs with it on do not
find that one (on `cuda:0` they do)."""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import functools
import re
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from tuned_kernels.errors import warn
from tuned_kernels.inductor_edge import COMPILER_MODULE, reduction_choices
from tuned_kernels.inductor_edge.cache_files import place_new_file
from tuned_kernels.inductor_edge.device_index import indices_named, renumbered, single_cuda_index
from tuned_kernels.inductor_edge.shapes import INDUCTOR_DEVICE_KEYS, INDUCTOR_DEVICE_LOADS
from tuned_kernels.internals import holds

AOT_MODULE = "torch._functorch._aot_autograd.autograd_cache"
COMPUTE_CAPABILITY = re.compile(r"DeviceProperties\(type='cuda', index=\d+, [^)]*?\bcc=(\d+)")
MAX_MOVED_SOURCE = 64 << 20  # a graph's generated code larger than this is not parsed for its kernels
_keying = threading.local()  # .index: the GPU keyed as cuda:0 while a key is computed; .foreign: another seen
_loading = threading.local()  # .index: the GPU the inputs of the graph being looked up are on
_overrides: list[tuple[type, Any, Callable[..., Any]]] = []  # (key pickler, its own override, ours)
_override_lock = threading.Lock()
_override_scopes = [0]  # keys being computed as if on cuda:0, on all threads
_moved: list[tuple[int, int]] = []  # (from, to) of each graph moved
_said: set[str] = set()


def install(codecache: ModuleType) -> None:
    """Once `torch._inductor.codecache` is imported: keys and loads as the module says (a torch laid out
    otherwise: Inductor's own keys, said once)."""
    if getattr(codecache, "tuned_kernels_moves", False) or not holds(INDUCTOR_DEVICE_KEYS):
        return
    if not holds(INDUCTOR_DEVICE_LOADS) or not callable(getattr(codecache, "compiled_fx_graph_hash", None)):
        return
    codecache.tuned_kernels_moves = True  # type: ignore[attr-defined]
    codecache.compiled_fx_graph_hash = _keyed_as_cuda0(codecache.compiled_fx_graph_hash)  # type: ignore[attr-defined]
    _override_reductions(codecache.FxGraphCachePickler)
    cache = codecache.FxGraphCache
    cache._lookup_graph = staticmethod(_looked_up_on_inputs(cache._lookup_graph))
    cache.iterate_over_candidates = classmethod(_movable_candidates(cache.iterate_over_candidates.__func__))
    cache.cache_hit_post_compile = staticmethod(_moved_on_hit(cache.cache_hit_post_compile))
    from tuned_kernels.post_import import when_imported

    # the AOTAutograd module may be the one importing this one (not yet whole): tried again once Inductor's
    # compile entry is imported, which imports it whole, before any graph is keyed
    when_imported(AOT_MODULE, _install_aot_keys)
    when_imported(COMPILER_MODULE, lambda _: _install_aot_keys(sys.modules.get(AOT_MODULE)))


def moved() -> list[tuple[int, int]]:
    """The graphs moved in this process: (the index each was compiled for, the one it runs on)."""
    return list(_moved)


def _install_aot_keys(autograd_cache: ModuleType | None) -> None:
    key = getattr(autograd_cache, "autograd_cache_key", None)
    pickler = getattr(autograd_cache, "AOTAutogradCachePickler", None)
    if (
        getattr(autograd_cache, "tuned_kernels_moves", False)
        or not callable(key)
        or not isinstance(pickler, type)
    ):
        return  # done, or not whole yet
    autograd_cache.tuned_kernels_moves = True  # type: ignore[union-attr]
    if "reducer_override" in vars(pickler):  # its own (later torch): wrapped too
        _override_reductions(pickler)
    autograd_cache.autograd_cache_key = _keyed_as_cuda0(key, aot=True)  # type: ignore[union-attr]


def _keyed_as_cuda0(compute: Callable[..., Any], aot: bool = False) -> Callable[..., Any]:
    @functools.wraps(compute)
    def keyed(gm: Any, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        index = single_cuda_index(example_inputs)
        if not index or (aot and _bundled_aot_entries()):  # cuda:0, none or several: Inductor's own key
            index = None
        outer = (getattr(_keying, "index", None), getattr(_keying, "foreign", False))
        _keying.index, _keying.foreign = index, False
        try:
            with _overriding() if index is not None else contextlib.nullcontext():
                key = compute(gm, example_inputs, *args, **kwargs)
            if _keying.foreign:  # it names another GPU too, or names one in a way not moved: Inductor's own
                _keying.index = None
                key = compute(gm, example_inputs, *args, **kwargs)
            return key
        finally:
            _keying.index, _keying.foreign = outer

    return keyed


def _bundled_aot_entries() -> bool:
    """AOTAutograd entries that hold their graphs (a setting) load them with no look-up this module sees."""
    import torch._functorch.config as functorch_config

    return bool(getattr(functorch_config, "bundled_autograd_cache", False))


def _override_reductions(pickler: type) -> None:
    """The key pickler's reductions, within a key being computed as if on cuda:0: that device for this one,
    and the FX code naming it."""
    own = vars(pickler).get("reducer_override")

    def reducer_override(self: Any, obj: Any) -> Any:
        index = getattr(_keying, "index", None)
        reduced = None
        if index is not None:
            try:
                reduced = _as_on_cuda0(self, obj, index, own)
            except Exception:  # laid out otherwise than this expects: the key Inductor makes itself
                _keying.foreign = True
        if reduced is not None:
            return reduced
        return own(self, obj) if own is not None else NotImplemented

    _overrides.append((pickler, own, reducer_override))


@contextlib.contextmanager
def _overriding() -> Iterator[None]:
    """The key picklers' reductions overridden while a key is computed as if on cuda:0, and only then: an
    override (torch 2.11's pickler has none) runs in Python for every object pickled, so keys computed on
    cuda:0 or with no GPU keep Inductor's own speed. A pickler reads the override as each dump starts; one of
    another thread dumping meanwhile pickles as Inductor does (no scope on its thread)."""
    with _override_lock:
        _override_scopes[0] += 1
        if _override_scopes[0] == 1:
            for pickler, _, ours in _overrides:
                type.__setattr__(pickler, "reducer_override", ours)
    try:
        yield
    finally:
        with _override_lock:
            _override_scopes[0] -= 1
            if _override_scopes[0] == 0:
                for pickler, own, _ in _overrides:
                    if own is not None:
                        type.__setattr__(pickler, "reducer_override", own)
                    elif "reducer_override" in vars(pickler):
                        type.__delattr__(pickler, "reducer_override")


def _as_on_cuda0(pickler: Any, obj: Any, index: int, own: Callable[..., Any] | None) -> Any:
    import torch
    from torch._inductor.cudagraph_utils import BoxedDeviceIndex

    if isinstance(obj, torch.device) and obj.type == "cuda":
        if obj.index == index:
            return (torch.device, ("cuda", 0))
        _keying.foreign = _keying.foreign or obj.index is not None
    elif isinstance(obj, BoxedDeviceIndex) and obj.value is not None:
        if obj.value == index:
            replacement = copy.copy(obj)
            replacement.value = 0
            return replacement.__reduce_ex__(2)
        _keying.foreign = True
    elif isinstance(obj, torch.fx.GraphModule):
        return _graph_module_as_on_cuda0(pickler, obj, index, own)
    return None


def _graph_module_as_on_cuda0(pickler: Any, gm: Any, index: int, own: Callable[..., Any] | None) -> Any:
    code = renumbered(gm.code, index, 0)
    if code is None:
        _keying.foreign = True
        return None
    if code == gm.code:
        return None
    reduced = own(pickler, gm) if own is not None else NotImplemented
    if reduced is NotImplemented:
        reducer = pickler.dispatch_table.get(type(gm))
        reduced = reducer(gm) if reducer is not None else gm.__reduce__()
    function, arguments = reduced
    nested = isinstance(arguments[0], tuple)  # (fn, ((state, imports),)) rather than (fn, (state, imports))
    data, *rest = arguments[0] if nested else arguments
    moved = renumbered(data["_code"], index, 0)
    if moved is None:
        _keying.foreign = True
        return None
    state = ({**data, "_code": moved}, *rest)
    return (function, (state,) if nested else state)


def _looked_up_on_inputs(lookup: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(lookup)
    def looked_up(key: str, example_inputs: Any, *args: Any, **kwargs: Any) -> Any:
        _loading.index = single_cuda_index(example_inputs)
        try:
            return lookup(key, example_inputs, *args, **kwargs)
        finally:
            _loading.index = None

    return looked_up


def _movable_candidates(candidates: Callable[..., Any]) -> Callable[..., Any]:
    """The cache's entries for a key, less those that cannot run on the GPU being looked up for: a graph for
    another GPU that cannot be moved gives way to one Inductor compiled here under the same key after it."""

    @functools.wraps(candidates)
    def movable_candidates(cls: Any, *args: Any, **kwargs: Any) -> Any:
        index = getattr(_loading, "index", None)
        for found in candidates(cls, *args, **kwargs):
            if index is None or movable(found[0], index):
                yield found
            else:
                _say_unmovable(index)

    return movable_candidates


def _say_unmovable(index: int) -> None:
    _say_once(
        "unmovable",
        f"a compiled graph found for another GPU could not be moved to cuda:{index} (its code names its GPU "
        "in a way tuned-kernels does not move, or its kernels were compiled for another kind of GPU); "
        "Inductor compiles it",
    )


def _moved_on_hit(post_compile: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(post_compile)
    def moved_hit(graph: Any, cache_info: Any, constants: Any) -> Any:
        index = getattr(_loading, "index", None)
        if index is not None and not move(graph, index):
            _say_unmovable(index)
            return None, cache_info
        return post_compile(graph, cache_info, constants)

    return moved_hit


def movable(graph: Any, new: int) -> bool:
    """Whether `graph` (a `CompiledFxGraph` just unpickled) runs on CUDA device `new`, as it is or moved."""
    try:
        return _moved_source(graph, new) is not None
    except Exception as exc:  # a graph laid out otherwise, a GPU that cannot take it: a miss
        _say_layout(exc)
        return False


def _moved_source(graph: Any, new: int) -> str | None:
    """`graph`'s code moved to CUDA device `new` (its own where it runs there already); None: not movable."""
    indices = set(graph.device_idxs)
    if indices == {new} or not indices:
        return str(graph.source_code)
    if (
        len(indices) != 1
        or not set(graph.device_types) <= {"cuda", "cpu"}
        or getattr(graph, "torchbind_constants", None)
    ):
        return None
    source = renumbered(graph.source_code, next(iter(indices)), new)
    if source is None or not indices_named(source) <= {new} or not _compiled_for(source, new):
        return None
    return source


def move(graph: Any, new: int) -> bool:
    """Moves `graph` (a `CompiledFxGraph` just unpickled) to CUDA device `new`; whether it runs there now."""
    try:
        source = _moved_source(graph, new)
        indices = set(graph.device_idxs)
        if source is None or indices == {new} or not indices:
            return source is not None
        (old,) = indices
        _copy_kernel_choices(graph.source_code, old, new)
        _moved_fields(graph, source, old, new)
    except Exception as exc:  # a graph laid out otherwise, a GPU that cannot take it: a miss
        _say_layout(exc)
        return False
    _moved.append((old, new))
    return True


def _say_layout(exc: Exception) -> None:
    _say_once("layout", f"a compiled graph found for another GPU was not moved: {type(exc).__name__}: {exc}")


def _compiled_for(source: str, index: int) -> bool:
    """Whether every kernel of `source` was compiled for the compute capability of CUDA device `index` (a
    machine may hold GPUs of two kinds)."""
    here = capability(index)
    return all(int(cc) == here for cc in COMPUTE_CAPABILITY.findall(source))


def capability(index: int) -> int:
    """CUDA device `index`'s compute capability as Inductor writes it in a kernel's device properties (90)."""
    import torch
    from torch._inductor.runtime.hints import DeviceProperties

    return int(DeviceProperties.create(torch.device("cuda", index)).cc)


def _moved_fields(graph: Any, source: str, old: int, new: int) -> None:
    from torch._inductor.codecache import code_hash

    graph.source_code = source
    graph.cache_key = code_hash(source.strip())  # the generated module's own file, not the old index's
    graph.device_idxs = type(graph.device_idxs)([new])
    if graph.constants:
        graph.constants = {name: _on(value, old, new) for name, value in graph.constants.items()}
    bundle = graph._triton_bundle
    if bundle is not None:
        binaries = [
            dataclasses.replace(a, device=new) if a.device == old else a for a in bundle.kernel_artifacts
        ]
        graph._triton_bundle = dataclasses.replace(bundle, kernel_artifacts=binaries, static_autotuners=[])


def _on(value: Any, old: int, new: int) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.device == torch.device("cuda", old):
        return value.to(torch.device("cuda", new))
    return value


def kernel_sources(source: str) -> list[str]:
    """The source of each Triton kernel a graph's generated code defines (`async_compile.triton(name, src)`)."""
    if len(source) > MAX_MOVED_SOURCE:
        return []
    found = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "triton"
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            found.append(node.args[1].value)
    return found


def _copy_kernel_choices(source: str, old: int, new: int) -> None:
    """Inductor's tuned config of each kernel (its `.best_config`, named from the kernel's source) copied to
    the name of the kernel moved to `new`, and any reduction choice a bundle holds for it."""
    for kernel in kernel_sources(source):
        moved = renumbered(kernel, old, new)
        if moved is None or moved == kernel:
            continue
        was, now = _kernel_module(kernel), _kernel_module(moved)
        reduction_choices.also_named(now.stem, was.stem)
        was_config, now_config = _best_config(was), _best_config(now)
        if was_config is not None and now_config is not None and was_config.is_file():
            with contextlib.suppress(OSError):
                place_new_file(now_config, was_config.read_bytes())


def _kernel_module(kernel: str) -> Path:
    """Where Inductor writes a kernel's module (`PyCodeCache.load`: named by the hash of its source)."""
    from torch._inductor.codecache import code_hash, get_path

    return Path(get_path(code_hash(kernel.strip()), "py")[2])


def _best_config(module: Path) -> Path | None:
    """The `.best_config` file Inductor's autotune cache reads for the kernel of `module` (as Inductor names it:
    from the module's name and torch's build)."""
    from torch._inductor.runtime.autotune_cache import AutotuneCache

    meta: dict[str, object] = {"autotune_local_cache": True, "autotune_remote_cache": False}
    cache = AutotuneCache.create(meta, str(module), "")
    local = getattr(cache, "local_cache", None)
    return Path(local[1]) if local else None


def _say_once(kind: str, message: str) -> None:
    if kind not in _said:
        _said.add(kind)
        with contextlib.suppress(Warning):  # a warning made an error (-W error): the program goes on
            warn(message)
