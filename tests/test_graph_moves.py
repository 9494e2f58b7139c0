"""A compiled graph made on one GPU is found, and runs, on another GPU of the machine: keyed as if on cuda:0,
and moved as it loads (tuned_kernels/inductor_edge/graph_moves.py). On the CPU: the keys Inductor computes
for graphs whose inputs are fake CUDA tensors, and the move of generated code as Inductor writes it (the
GPU run serves a real capture on cuda:1: test_serving_matrix.py's two-GPU rows)."""

from __future__ import annotations

import textwrap
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tuned_kernels.inductor_edge.device_index import indices_named, renumbered, single_cuda_index

pytestmark = pytest.mark.timeout(300)

PROPERTIES = (
    "DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9, "
    "regs_per_multiprocessor=65536, max_threads_per_multi_processor=2048, warp_size=32)"
)
SIGNATURE = "{'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32'}"
KERNEL = textwrap.dedent(f"""
    import triton
    import triton.language as tl
    from torch._inductor.runtime import triton_helpers, triton_heuristics
    from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties

    @triton_heuristics.pointwise(
        size_hints={{'x': 4}}, filename=__file__,
        triton_meta={{'signature': {SIGNATURE}, 'device': {PROPERTIES}, 'constants': {{}}}},
        inductor_meta={{'kernel_name': 'triton_poi_fused_add_0', 'mutated_arg_names': []}},
        min_elem_per_thread=0
    )
    @triton.jit
    def triton_poi_fused_add_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
        xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
        tl.store(out_ptr0 + xindex, tl.load(in_ptr0 + xindex) + xindex.to(tl.float32), xindex < xnumel)
""")  # fmt: skip

WRAPPER = (
    "from torch._C import _cuda_getCurrentRawStream as get_raw_stream\n"
    f"triton_poi_fused_add_0 = async_compile.triton('triton_poi_fused_add_0', '''{KERNEL}''', device_str='cuda')\n"
    + textwrap.dedent("""
    def call(args):
        arg0_1, = args
        args.clear()
        with torch.cuda._DeviceGuard(0):
            torch.cuda.set_device(0)
            buf0 = empty_strided_cuda((4, ), (1, ), torch.float32)
            stream0 = get_raw_stream(0)
            triton_poi_fused_add_0.run(arg0_1, buf0, 4, stream=stream0)
            buf1 = torch.ops.aten.full.default([4], 1.0, device=device(type='cuda', index=0), pin_memory=False)
        return (buf0, buf1, )
    """)
)  # fmt: skip


def test_every_way_inductor_writes_a_device_index_is_found() -> None:
    assert indices_named(WRAPPER) == {0}
    assert indices_named("x.to('cuda:3'); torch.cuda.set_device(2)") == {2, 3}
    assert indices_named("xindex = 1; device(type='cuda'); index=4") == set()


def test_renumbered_code_names_only_the_new_index() -> None:
    moved = renumbered(WRAPPER, 0, 1)
    assert moved is not None and indices_named(moved) == {1}
    for written in (
        "_DeviceGuard(1)",
        "set_device(1)",
        "get_raw_stream(1)",
        "index=1, multi_processor_count",
    ):
        assert written in moved
    assert moved.replace("1", "0") == WRAPPER.replace("1", "0")  # nothing else changed


def test_code_naming_two_gpus_is_not_renumbered() -> None:
    assert renumbered(WRAPPER + "\nbuf2 = buf0.to(device(type='cuda', index=1))\n", 0, 1) is None


@pytest.mark.parametrize(
    "code",
    [
        "kernel_meta = DeviceProperties(type='hip', index=0, cc='gfx942')",  # ROCm
        "AOTICudaGuard device_guard(0);",  # C++ wrapper code
        "aoti_torch_get_current_cuda_stream(0, (void**)&stream0);",
        "to = x.to(0)",  # an index given as a bare integer
        "y = x.cuda(0)",
        "buf = torch.empty(4, device = 0)",
        "with torch.cuda.device(0): pass",
    ],
)
def test_code_naming_a_device_in_a_way_not_rewritten_is_not_renumbered(code: str) -> None:
    assert renumbered(f"{WRAPPER}\n{code}\n", 0, 1) is None


def test_the_single_cuda_index_of_inputs() -> None:
    def on(kind: str, index: int | None) -> Any:
        return SimpleNamespace(device=SimpleNamespace(type=kind, index=index))

    assert single_cuda_index([on("cuda", 1), on("cuda", 1), 3]) == 1
    assert single_cuda_index([on("cuda", 1), on("cuda", 0)]) is None
    assert single_cuda_index([on("cpu", None), 2.0]) is None
    assert single_cuda_index([on("cuda", None)]) is None


def _graph(named: int, bare: bool = False) -> Any:
    """The FX graph of `x + arange(4)`, the arange made on cuda:`named` (`bare`: `x.to(named)` instead)."""
    import torch

    graph = torch.fx.Graph()
    x = graph.placeholder("x")
    if bare:
        made = graph.call_method("to", (x, named))
    else:
        made = graph.call_function(
            torch.ops.aten.arange.default, (4,), {"device": torch.device("cuda", named)}
        )
    graph.output(graph.call_function(torch.ops.aten.add.Tensor, (x, made)))
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def _keyed(index: int, key: Any, gm: Any) -> str:
    """`key(gm, [x])` with x a fake tensor on cuda:`index`."""
    import torch
    from torch._guards import TracingContext, tracing
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode() as mode:
        example = torch.empty(4, device=f"cuda:{index}")
    with tracing(TracingContext(mode)):
        return str(key(gm, [example]))


def _graph_key(index: int, named: int | None = None, bare: bool = False, boxed: int | None = None) -> str:
    """Inductor's FX-graph key for `_graph`, x on fake cuda:`index` (`boxed`: the backward's forward index)."""
    from torch._inductor import codecache
    from torch._inductor.cudagraph_utils import BoxedDeviceIndex

    kwargs = {} if boxed is None else {"boxed_forward_device_index": BoxedDeviceIndex(boxed)}
    gm = _graph(index if named is None else named, bare)
    return _keyed(index, lambda g, xs: codecache.compiled_fx_graph_hash(g, xs, kwargs, [])[0], gm)


def test_a_graph_on_another_gpu_is_keyed_as_on_cuda0_and_one_naming_two_gpus_is_not() -> None:
    from torch._inductor import codecache

    from tuned_kernels.inductor_edge import graph_moves

    before = _graph_key(0)
    if not getattr(codecache, "tuned_kernels_moves", False):
        assert _graph_key(1) != before  # Inductor's own key holds the index
    own = vars(codecache.FxGraphCachePickler).get("reducer_override")
    graph_moves.install(codecache)
    assert _graph_key(0) == before  # on cuda:0 the key is Inductor's own: bundles made before are found
    assert _graph_key(1) == before
    assert _graph_key(3) == before
    assert _graph_key(1, named=0) != before  # inputs on cuda:1, a tensor made on cuda:0: another program
    assert _graph_key(0, named=1) != before
    assert _graph_key(1, bare=True) != _graph_key(0, bare=True)  # `x.to(1)`: not rewritten, Inductor's key
    assert _graph_key(1, boxed=1) == _graph_key(0, boxed=0) != _graph_key(1, boxed=0)  # a backward's forward
    # between keys, Inductor's pickler is its own again (one in Python slows every key: torch 2.11 has none)
    assert vars(codecache.FxGraphCachePickler).get("reducer_override") is own


def test_aotautograd_keys_a_graph_on_another_gpu_as_on_cuda0() -> None:
    """The AOTAutograd key's pickler, which reduces the graph module its own way on later torch."""
    from torch._functorch._aot_autograd import autograd_cache
    from torch._inductor import codecache

    from tuned_kernels.inductor_edge import graph_moves

    graph_moves.install(codecache)

    def pickled(gm: Any, _: Any) -> bytes:
        return bytes(autograd_cache.AOTAutogradCachePickler(gm).dumps(gm))

    key = graph_moves._keyed_as_cuda0(pickled)
    assert _keyed(1, key, _graph(1)) == _keyed(0, key, _graph(0)) != _keyed(1, pickled, _graph(1))


def _found(source: str) -> Any:
    """A graph as Inductor unpickles one from its cache, compiled for cuda:0."""
    return SimpleNamespace(
        source_code=source, cache_key="c-old", device_idxs=[0], device_types=["cuda"], constants=None,
        torchbind_constants={}, _triton_bundle=None,
    )  # fmt: skip


def test_a_graph_found_for_cuda0_is_moved_with_its_kernels_tuned_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    from tuned_kernels.inductor_edge import graph_moves

    monkeypatch.setattr(
        graph_moves, "capability", lambda index: 90
    )  # cuda:1, an H100 as the kernels' cc says

    was = graph_moves._best_config(graph_moves._kernel_module(KERNEL))
    assert was is not None and str(was).startswith(str(tmp_path))
    was.parent.mkdir(parents=True)
    was.write_text('{"XBLOCK": 4, "num_warps": 1, "num_stages": 1, "configs_hash": "ab"}')
    graph = _found(WRAPPER)
    assert graph_moves.move(graph, 1)
    assert indices_named(graph.source_code) == {1} and graph.device_idxs == [1]
    assert graph.cache_key != "c-old"
    (moved_kernel,) = graph_moves.kernel_sources(graph.source_code)
    now = graph_moves._best_config(graph_moves._kernel_module(moved_kernel))
    assert now is not None and now != was and now.read_text() == was.read_text()
    assert graph_moves.moved()[-1] == (0, 1)


def test_a_graph_found_where_it_runs_is_left_as_it_is_and_one_naming_two_gpus_is_not_moved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tuned_kernels.inductor_edge import graph_moves

    monkeypatch.setattr(graph_moves, "capability", lambda index: 90)
    graph = _found(WRAPPER)
    assert graph_moves.move(graph, 0) and graph.source_code == WRAPPER and graph.cache_key == "c-old"
    spanning = _found(WRAPPER + "\nbuf2 = buf0.to(device(type='cuda', index=1))\n")
    assert not graph_moves.move(spanning, 1)
    spanning.device_idxs = [0, 1]
    assert not graph_moves.move(spanning, 1)


def test_the_summary_counts_the_graphs_moved_to_this_gpu() -> None:
    from tuned_kernels.registry.exit_summary import graphs_line

    counted = {"fxgraph_hits": 2, "files_placed": 3, "files_present": 0, "moved_to_this_gpu": 2}
    assert "made on another GPU, moved to this one: 2" in graphs_line(counted)
    assert "moved" not in graphs_line({**counted, "moved_to_this_gpu": 0})


def test_a_graph_is_not_moved_to_a_gpu_of_another_compute_capability(monkeypatch: pytest.MonkeyPatch) -> None:
    from tuned_kernels.inductor_edge import graph_moves

    monkeypatch.setattr(graph_moves, "capability", lambda index: 80)  # cuda:1 an A100 beside an H100
    graph = _found(WRAPPER)
    assert not graph_moves.move(graph, 1) and graph.source_code == WRAPPER


def test_a_graph_that_cannot_be_moved_gives_way_to_the_one_compiled_here_under_its_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Inductor compiles a graph whose cached entry could not be moved and saves it under the same key: its
    next look-up there passes over the entry it cannot move to the one it compiled."""
    from tuned_kernels.inductor_edge import graph_moves

    monkeypatch.setattr(graph_moves, "capability", lambda index: 90)
    unmovable = _found(WRAPPER + "\nbuf2 = buf0.to(device(type='cuda', index=1))\n")
    compiled_here = _found(renumbered(WRAPPER, 0, 1))
    compiled_here.device_idxs = [1]
    entries = graph_moves._movable_candidates(
        lambda cls, key: iter([(unmovable, b"a", True), (compiled_here, b"b", True)])
    )
    lookup = graph_moves._looked_up_on_inputs(lambda key, inputs: list(entries(None, key)))
    on_cuda1 = SimpleNamespace(device=SimpleNamespace(type="cuda", index=1))
    assert lookup("k", [on_cuda1]) == [(compiled_here, b"b", True)]
    assert len(lookup("k", [3.0])) == 2  # no GPU in the look-up: Inductor's own choice
