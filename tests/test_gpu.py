"""GPU checks, run on a GPU machine by ci/gpu_run.sh (TUNED_KERNELS_GPU_TESTS=1); skipped, with that
reason, on the CPU-only CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tuned_kernels.results import read_results

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[1]


def test_detects_the_gpu_it_runs_on() -> None:
    import torch
    from tuned_kernels.hardware import detect

    target = detect()
    major, minor = torch.cuda.get_device_capability(0)
    assert target.arch == f"sm{major}{minor}" and target.device_name == torch.cuda.get_device_name(0)


def test_tuned_bundle_serves_hits_without_benchmarking(tmp_path: Path) -> None:
    results = tmp_path / "r.pb"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "tune",
            "--corpus",
            str(ROOT / "benchmarks/matmul4.py"),
            "--shapes",
            "quick",
            "-o",
            str(results),
        ],
        check=True,
        cwd=tmp_path,
        timeout=600,
    )
    # each timing says how many programs of its config a multiprocessor held (what predictions weigh by)
    assert all(t.resident >= 1 for e in read_results(results).entries for t in e.timings)
    program = (
        "import os, torch, tuned_kernels; tuned_kernels.enable()\n"
        "from triton import knobs\n"
        "compiled = []\n"
        "knobs.compilation.listener = lambda *, cache_hit, **_: compiled.append(cache_hit)\n"
        "from tuned_kernels import ops\n"
        "a = torch.randn(16, 4096, device='cuda', dtype=torch.float16)\n"
        "b = torch.randn(4096, 4096, device='cuda', dtype=torch.float16)\n"
        "for _ in range(3):  # the first launch served; the next two direct, on new data\n"
        "    a = torch.randn(16, 4096, device='cuda', dtype=torch.float16)\n"
        "    c = ops.triton_matmul(a, b); torch.cuda.synchronize()\n"
        "    ref = a.float() @ b.float(); assert ((c.float() - ref).abs().max() / ref.abs().max()) < 1e-2\n"
        "s = tuned_kernels.stats(); print(s['hits'], s['misses'], s['configs_benchmarked'],\n"
        "    s['compiled_kernels']['served'], compiled.count(False))\n"
    )
    env = {
        "TRITON_CACHE_DIR": str(tmp_path / "empty-triton-cache"),
        "TUNED_KERNELS_PATH": str(results),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": __import__("os").environ.get("PYTHONPATH", ""),
    }
    out = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    # 1 hit, 0 misses, 0 configs benchmarked, 1 compiled kernel served from the bundle, 0 compilations
    assert out.returncode == 0 and out.stdout.split() == ["1", "0", "0", "1", "0"], out.stdout + out.stderr


def test_the_committed_full_matmul_bundle_serves_every_key_without_benchmarking(tmp_path: Path) -> None:
    """benchmarks/' full-matmul bundle (the matmul numbers of BENCHMARKS.md) serves all 168 keys of the
    kernels as they are: the choice between Triton and cuBLAS per key, and the kernel each key launches."""
    import triton

    bundle = ROOT / "benchmarks/matmul-full-h100-triton3.6.0.pb.zst"
    if read_results(bundle).header.compiler.triton_version != triton.__version__:
        pytest.skip("the bundle is for another triton")
    program = (
        "import json, torch, tuned_kernels; tuned_kernels.enable()\n"
        "from tuned_kernels.aot.kernels.builtin import LLM_M, LLM_NK\n"
        "from tuned_kernels.ops import matmul, triton_matmul\n"
        "for dtype in (torch.float16, torch.bfloat16):\n"
        "    for n, k in LLM_NK:\n"
        "        for m in LLM_M:\n"
        "            a = torch.randn(m, k, device='cuda', dtype=dtype)\n"
        "            b = torch.randn(k, n, device='cuda', dtype=dtype)\n"
        "            matmul(a, b); triton_matmul(a, b)\n"
        "s = tuned_kernels.stats(); print(json.dumps([s['hits'], s['misses'], s['configs_benchmarked']]))\n"
    )
    env = {**os.environ, "TUNED_KERNELS_PATH": str(bundle), "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o")}
    out = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=500
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert json.loads(out.stdout.splitlines()[-1]) == [168, 0, 0], out.stdout + out.stderr[-2000:]


def test_a_line_added_above_a_served_kernel_compiles_it_once_and_benchmarks_nothing(tmp_path: Path) -> None:
    """A captured kernel keeps being served after an import is added above it: no config benchmarked. Its
    compiled kernel is keyed by Triton's cache key, which counts lines, so Triton compiles it once."""
    app = tmp_path / "app.py"
    app.write_text((ROOT / "tests/corpora/captured_app.py").read_text())
    bundle = tmp_path / "app.pb.zst"
    capture_env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "capture-cache")}
    run = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--", sys.executable, str(app)],
        env=capture_env, capture_output=True, text=True, cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    app.write_text("import os  # a line added above every kernel\n" + app.read_text())
    serve_env = {**os.environ, "TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle),
                 "TUNED_KERNELS_VERBOSE": "1", "TRITON_CACHE_DIR": str(tmp_path / "empty-cache"),
                 "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o")}  # fmt: skip
    out = subprocess.run(
        [sys.executable, str(app)], env=serve_env, capture_output=True, text=True, cwd=tmp_path, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "tuned-kernels: 1 hits, 0 misses; 0 configs benchmarked" in out.stderr, out.stderr[-3000:]
    # the program's three kernels (the winner, its other specialization, a plain kernel), compiled once each
    assert "COMPILED 3" in out.stdout, out.stdout + out.stderr[-3000:]


def test_configs_are_timed_from_one_graph_launch_and_a_call_that_waits_on_the_device_by_do_bench() -> None:
    """The tuner's device timing captures a call's repetitions in a CUDA graph: the call is issued while
    capturing, never while the device runs them, and each repetition has its own time. A call that waits
    for the device (reads a result on the host) cannot be captured: found before any capture is tried, it
    is timed by do_bench, counted, and the process goes on capturing."""
    import torch

    from tuned_kernels.triton_edge.benchmarker import (
        GRAPH_REPS,
        DeviceBenchmarker,
        default_benchmarker,
        graph_times,
        graphs_given_up,
    )

    x, issued = torch.randn(1 << 20, device="cuda"), [0]

    def call() -> None:
        issued[0] += 1
        torch.mul(x, 2.0)

    times = graph_times(call, warmup_ms=5, rep_ms=20)
    assert times is not None and len(times) > GRAPH_REPS and min(times) > 0
    # issued once to warm, then only while capturing (the estimate's 5, the measured graph's repetitions):
    # the graph replayed holds the rest
    assert issued[0] == 1 + 5 + GRAPH_REPS
    timer = default_benchmarker(on_gpu=True)
    assert isinstance(timer, DeviceBenchmarker) and timer.graphed
    assert timer(call) > 0 and timer.fallbacks == 0
    assert timer(lambda: torch.mul(x, 2.0).sum().item()) > 0 and timer.fallbacks == 1
    # found before any capture (run once with torch's synchronisation check failing): the process captures on
    assert graphs_given_up() is None and graph_times(call, warmup_ms=5, rep_ms=20) is not None


GIVES_UP = """
import json, torch
from tuned_kernels.triton_edge.benchmarker import default_benchmarker, graph_times, graphs_given_up

x, calls = torch.randn(1 << 20, device="cuda"), [0]

def waits_after_its_first_call():  # passes the check before capture, then waits for the device inside it
    calls[0] += 1
    y = torch.mul(x, 2.0)
    if calls[0] > 1:
        y.sum().item()

timer = default_benchmarker(on_gpu=True)
first = timer(waits_after_its_first_call)
later = timer(lambda: torch.mul(x, 2.0))
print(json.dumps({"times": [first, later], "fallbacks": timer.fallbacks, "why": graphs_given_up(),
                  "graph": graph_times(lambda: torch.mul(x, 2.0), 5, 20)}))
"""


def test_a_capture_that_fails_makes_the_process_time_by_do_bench_from_then_on_said_once() -> None:
    """A call the check before capture lets through and the capture then refuses leaves torch's allocator
    with a capture it never ended: that config and every later one are timed by do_bench (the process,
    its own here, captures no more), with one warning."""
    done = subprocess.run(
        [sys.executable, "-c", GIVES_UP], capture_output=True, text=True, timeout=300, env=os.environ
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert min(out["times"]) > 0 and out["fallbacks"] == 2 and out["why"] and out["graph"] is None
    said = [line for line in done.stderr.splitlines() if "could not be captured in a CUDA graph" in line]
    assert len(said) == 1, done.stderr[-3000:]


CONFIGS_GRAPHED = """
import json, torch
import torch._inductor.runtime.triton_heuristics
from tuned_kernels.inductor_edge import config_timing

config_timing.install()
x = torch.randn(4096, 1000, device="cuda")
before = x.clone()
f = torch.compile(lambda t: t.mul_(2).relu().sum(dim=1), mode="max-autotune-no-cudagraphs")
out = f(x)
timed, fallbacks = config_timing.configs_timed()
print(json.dumps({"timed": timed, "fallbacks": fallbacks, "written_once": torch.equal(x, before * 2),
                  "equal": torch.allclose(out, (before * 2).relu().sum(dim=1), rtol=1e-4, atol=1e-2)}))
"""


def test_a_captures_generated_kernels_configs_are_timed_from_cuda_graphs_on_copies_of_what_they_write(
    tmp_path: Path,
) -> None:
    """Inside a capture, the configs Inductor times for its generated kernels (at the first launch and in
    coordinate descent) are timed by the tuner's CUDA-graph timing, on the copies Inductor makes of the
    arguments a kernel writes: the program's tensor is written once, by the program."""
    done = subprocess.run(
        [sys.executable, "-c", CONFIGS_GRAPHED],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout.splitlines()[-1])
    assert out["timed"] > 0 and out["fallbacks"] == 0, out
    assert out["written_once"] and out["equal"], out


def test_split_k_matmul_is_exact_across_launches_and_streams() -> None:
    """The split-K kernel's last program per tile adds the parts other programs wrote (an atomic counter,
    reset for the next launch): every split, launched again and again on two streams at once, matches
    cuBLAS, and leaves every counter at zero."""
    import torch

    from tuned_kernels.kernels import skinny_matmul
    from tuned_kernels.triton_edge.keys import config_from_triton
    from tuned_kernels.triton_edge.launch import forced_config

    m, n, k = 16, 4096, 4096
    space = skinny_matmul.prune_skinny(skinny_matmul.skinny_configs(), {"M": m, "N": n, "K": k})
    streams = [torch.cuda.Stream(), torch.cuda.Stream()]
    gen = torch.Generator(device="cuda").manual_seed(0)
    inputs = [
        (torch.randn(m, k, device="cuda", dtype=torch.float16, generator=gen) * k**-0.5,
         torch.randn(k, n, device="cuda", dtype=torch.float16, generator=gen))
        for _ in streams
    ]  # fmt: skip
    for split in (2, 8, 16):
        config = next(c for c in space if c.kwargs["SPLIT_K"] == split and c.kwargs["BLOCK_N"] == 64)
        outs = [torch.empty(m, n, device="cuda", dtype=torch.float16) for _ in streams]
        torch.cuda.synchronize()
        with forced_config(skinny_matmul.matmul_skinny_kernel, config):
            for _ in range(50):
                for stream, (a, b), c in zip(streams, inputs, outs, strict=True):
                    with torch.cuda.stream(stream):
                        skinny_matmul.skinny_matmul(a, b, c, m, n, k)
        torch.cuda.synchronize()
        for (a, b), c in zip(inputs, outs, strict=True):
            assert (c.float() - (a @ b).float()).abs().max().item() < 1e-2, config_from_triton(
                config
            ).describe()
    assert len(skinny_matmul._workspaces) >= 2  # one per stream
    assert all(int(counts.abs().sum()) == 0 for _, counts in skinny_matmul._workspaces.values())


def test_direct_launches_compute_what_launches_through_triton_compute() -> None:
    """After a specialization's first launch, triton_matmul calls the compiled kernel's launcher directly:
    for the split-K, copy-engine and tile kernels, on 16-byte aligned and misaligned operands (another
    specialization), each of several launches on new data matches cuBLAS, and the direct path was taken."""
    import torch

    from tuned_kernels.kernels import matmul, skinny_matmul, tma_matmul
    from tuned_kernels.triton_edge.direct_launch import DirectLaunches
    from tuned_kernels.triton_edge.launch import forced_config

    def operand(rows: int, cols: int, offset: int) -> torch.Tensor:
        """Starting `offset` elements into its memory (2 bytes each: 1 is off the 16-byte alignment)."""
        flat = torch.randn(rows * cols + offset, device="cuda", dtype=torch.float16) * cols**-0.5
        view = flat[offset:].view(rows, cols)
        assert (view.data_ptr() % 16 == 0) == (offset == 0)
        return view

    n = k = 1024
    skinny = skinny_matmul.prune_skinny(skinny_matmul.skinny_configs(), {"M": 16, "N": n, "K": k})
    kernels = [
        (skinny_matmul.matmul_skinny_kernel, skinny[0], 16, 0),
        (skinny_matmul.matmul_skinny_kernel, skinny[0], 16, 1),  # 2 bytes off: another specialization
        (matmul.matmul_kernel, matmul.matmul_configs()[0], 256, 1),  # misaligned: not the copy engine's
    ]
    if torch.cuda.get_device_capability() >= (9, 0):
        kernels.append((tma_matmul.matmul_tma_kernel, tma_matmul.tma_configs()[0], 256, 0))
    for kernel, config, m, offset in kernels:
        with forced_config(kernel, config):
            for _ in range(3):
                a, b = operand(m, k, offset), operand(k, n, 0)
                c = matmul.triton_matmul(a, b)
                error = (c.float() - a.float() @ b.float()).abs().max().item()
                assert error < 2e-2, (kernel.base_fn.__name__, offset, error)
        launches = kernel.__dict__.get("_tuned_kernels_direct")
        assert isinstance(launches, DirectLaunches) and any(
            hasattr(direct, "compiled") for direct in launches.launches.values()
        ), kernel.base_fn.__name__


def test_direct_launches_of_row_and_attention_kernels_follow_grids_that_read_more_than_arguments() -> None:
    """softmax's grid is its row count and attention's closes over batch x heads, neither an argument of
    the kernel: launched directly with other row counts and batches (one specialization), each matches
    torch."""
    import torch

    from tuned_kernels.kernels import attention, rowwise
    from tuned_kernels.triton_edge.launch import forced_config

    with forced_config(rowwise.softmax_kernel, rowwise.row_configs()[4]):  # 1024 columns a block
        for rows in (3, 64, 7, 64):
            x = torch.randn(rows, 1000, device="cuda")
            assert torch.allclose(rowwise.softmax(x), torch.softmax(x, dim=-1), atol=1e-5), rows
    with forced_config(attention.attention_kernel, attention.attention_configs()[0]):
        for batch in (1, 3, 2):
            q, k, v = (torch.randn(batch, 2, 128, 64, device="cuda", dtype=torch.float16) for _ in range(3))
            want = attention.reference_attention(q, k, v, causal=True).to(torch.float16)
            error = (attention.attention(q, k, v, causal=True) - want).abs().max().item()
            assert error < 1e-2, (batch, error)
    for kernel in (rowwise.softmax_kernel, attention.attention_kernel):
        launches = kernel.__dict__["_tuned_kernels_direct"].launches
        assert any(hasattr(direct, "compiled") for direct in launches.values()), kernel.base_fn.__name__


def test_every_config_of_the_copy_engine_kernel_matches_cublas_where_triton_matmul_uses_it() -> None:
    """On Hopper, triton_matmul runs the copy engine's kernel for more than 64 rows; each config of its
    space, on fp16 and bf16 shapes whose edges cut tiles, matches cuBLAS (persistent programs, zero-filled
    loads and clipped stores past the edges)."""
    import torch

    from tuned_kernels.kernels import matmul, tma_matmul
    from tuned_kernels.triton_edge.keys import config_from_triton
    from tuned_kernels.triton_edge.launch import LaunchesAnother, forced_config, probe_launch

    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("no copy engine before sm90")
    gen = torch.Generator(device="cuda").manual_seed(0)
    for dtype, (m, n, k) in ((torch.float16, (300, 264, 200)), (torch.bfloat16, (1000, 520, 72))):
        a = torch.randn(m, k, device="cuda", dtype=dtype, generator=gen) * k**-0.5
        b = torch.randn(k, n, device="cuda", dtype=dtype, generator=gen)
        probe_launch(tma_matmul.matmul_tma_kernel, lambda a=a, b=b: matmul.triton_matmul(a, b))
        with pytest.raises(LaunchesAnother):
            probe_launch(matmul.matmul_kernel, lambda a=a, b=b: matmul.triton_matmul(a, b))
        want = (a.float() @ b.float()).to(dtype).float()
        for config in tma_matmul.tma_configs():
            c = torch.full((m, n), float("nan"), device="cuda", dtype=dtype)
            with forced_config(tma_matmul.matmul_tma_kernel, config):
                matmul.triton_matmul(a, b, out=c)
            error = (c.float() - want).abs().max().item()
            assert error < 3e-2, (dtype, config_from_triton(config).describe(), error)


def test_kernels_compiled_without_the_gpu_are_what_the_launches_ask_for(tmp_path: Path) -> None:
    """`compile` on a machine that sees no GPU; then every quick case of the built-in corpus launches on
    the GPU with an empty Triton cache: nothing is compiled, every output matches its reference."""
    import os

    no_gpu = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TRITON_CACHE_DIR": str(tmp_path / "compile-cache")}
    untuned, compiled = tmp_path / "untuned.pb", tmp_path / "compiled.pb.zst"
    subprocess.run(
        [sys.executable, str(ROOT / "tests/corpora/untuned_results.py"), "sm90", str(untuned)],
        env=no_gpu,
        check=True,
        timeout=600,
    )
    subprocess.run(
        [
            sys.executable,
            "-m",
            "tuned_kernels",
            "compile",
            str(untuned),
            "--target",
            "sm90",
            "-o",
            str(compiled),
        ],
        env=no_gpu,
        check=True,
        timeout=600,
    )
    program = (
        "import torch, tuned_kernels; tuned_kernels.enable()\n"
        "from triton import knobs\n"
        "compiled = []\n"
        "knobs.compilation.listener = lambda *, cache_hit, **_: compiled.append(cache_hit)\n"
        "from tuned_kernels.aot.corpus import distinct_runs\n"
        "from tuned_kernels.aot.kernels.builtin import CORPUS\n"
        "from tuned_kernels.aot.work import mismatch\n"
        "wrong = []\n"
        "kernels = [f for f in CORPUS if f.name != 'matmul_impl']  # a choice compiles nothing\n"
        "for f, case in distinct_runs(kernels, 'quick'):\n"
        "    i = f.make_inputs(case, 'cuda', torch.Generator().manual_seed(0))\n"
        "    if mismatch(f.run(i), f.reference(i), f.tolerance): wrong.append(case.id)\n"
        "s = tuned_kernels.stats()\n"
        "print(s['hits'], s['misses'], compiled.count(False), s['compiled_kernels']['served'], wrong)\n"
    )
    env = {
        **os.environ,
        "TRITON_CACHE_DIR": str(tmp_path / "empty"),
        "TUNED_KERNELS_PATH": str(compiled),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "overlay"),
    }
    out = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, cwd=tmp_path, timeout=600
    )
    assert out.returncode == 0, out.stderr
    hits, misses, compilations, served, wrong = out.stdout.strip().split(" ", 4)
    from tuned_kernels.aot.corpus import distinct_runs
    from tuned_kernels.aot.kernels.builtin import CORPUS

    kernel_cases = len(distinct_runs([f for f in CORPUS if f.name != "matmul_impl"], "quick"))
    assert (hits, misses, compilations, wrong) == (str(kernel_cases), "0", "0", "[]"), out.stdout + out.stderr
    assert int(served) >= 1, out.stdout


def _captured(tmp_path: Path, app: list[str]) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """`tuned-kernels capture` of the command `app` into tmp_path/captured.pb.zst (Triton's cache its own):
    the bundle and the capture's run."""
    bundle = tmp_path / "captured.pb.zst"
    capture_env = {**os.environ, "TRITON_CACHE_DIR": str(tmp_path / "capture-cache")}
    run = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--", *app],
        env=capture_env, capture_output=True, text=True, cwd=tmp_path, timeout=600
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return bundle, run


PROGRAMS = {
    "ours": [
        "tests/corpora/captured_app.py"
    ],  # a pre_hook config, a constexpr outside the key, a plain kernel
    "fla-core": ["tests/corpora/fla_norm_app.py", "cuda"],  # an Autotuner subclass, all-keyword launches
    "liger-kernel": ["tests/corpora/liger_app.py"],  # reset_to_zero; TMA descriptors set by pre_hooks
}


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_captured_program_compiles_and_benchmarks_nothing_in_a_fresh_process(
    tmp_path: Path, program: str
) -> None:
    """`tuned-kernels capture` keeps every kernel the program launched (winners, their other
    specializations, plain @triton.jit kernels); a fresh process with only that file and an empty Triton
    cache compiles none of them, benchmarks no config and computes the same outputs."""
    app = [sys.executable, str(ROOT / PROGRAMS[program][0]), *PROGRAMS[program][1:]]
    bundle, run = _captured(tmp_path, app)
    kept = read_results(bundle)
    if program == "ours":  # the winner (its entry), its other specialization and the plain kernel
        kept_kernels = sorted((e.kernel.name, len(e.artifacts)) for e in kept.entries)
        assert kept_kernels == [("captured_app.scale", 1), ("compiled:add_one", 1), ("compiled:scale", 1)], (
            kept_kernels
        )
    assert not list(tmp_path.glob("*.lock"))  # no stray lock file beside -o
    serve_env = {**os.environ, "TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle),
                 "TRITON_CACHE_DIR": str(tmp_path / "empty-cache"), "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o"),
                 "TUNED_KERNELS_REPORT": str(tmp_path / "report.jsonl")}  # fmt: skip
    out = subprocess.run(app, env=serve_env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "COMPILED 0" in out.stdout, out.stdout + out.stderr[-3000:]
    checksums = [line for line in run.stdout.splitlines() if line.startswith("CHECKSUM")]
    assert checksums == [line for line in out.stdout.splitlines() if line.startswith("CHECKSUM")]
    report = json.loads((tmp_path / "report.jsonl").read_text().splitlines()[0])
    assert report["misses"] == 0 and report["hits"] >= 1, report


def test_a_served_program_finds_tritons_host_modules_built_ahead(tmp_path: Path) -> None:
    """The warm-up has Triton build its driver utilities and each captured kernel's launcher in the
    background as serving starts; a program that launches after it finished runs no C compiler at all, in
    an empty Triton cache."""
    app = str(ROOT / "tests/corpora/captured_app.py")
    bundle, _ = _captured(tmp_path, [sys.executable, app])
    signatures = {a.host_signature for e in read_results(bundle).entries for a in e.artifacts}
    assert signatures == {("*fp32", "*fp32", "i32", "constexpr", "constexpr"), ("*fp32", "i32", "constexpr")}
    program = (
        "import runpy, subprocess, sys, triton\n"  # importing Triton starts serving (TUNED_KERNELS=1)
        "from tuned_kernels.registry import installed_registry\n"
        "installed_registry().warmup.join()\n"
        "compilers = []\n"
        "real = subprocess.check_call\n"
        "subprocess.check_call = lambda cmd, **kw: (compilers.append(cmd[0]), real(cmd, **kw))[1]\n"
        f"sys.argv = [{app!r}]\n"
        f"runpy.run_path({app!r}, run_name='__main__')\n"
        "print('HOST', len(compilers), installed_registry().host_modules)\n"
    )
    serve_env = {
        **os.environ,
        "TUNED_KERNELS": "1",
        "TUNED_KERNELS_PATH": str(bundle),
        "TRITON_CACHE_DIR": str(tmp_path / "empty"),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o"),
    }
    out = subprocess.run(
        [sys.executable, "-c", program], env=serve_env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    assert "COMPILED 0" in out.stdout and "HOST 0 BuildReport(built=3, failed=0" in out.stdout, out.stdout


def test_torch_compile_max_autotune_served_from_a_capture_benchmarks_no_gemm(tmp_path: Path) -> None:
    """torch.compile(mode="max-autotune"): a capture records Inductor's GEMM choices (Triton templates
    among them); a fresh process with only that file and empty Inductor and Triton caches benchmarks no GEMM
    choice, and a model with one more layer shape autotunes just that shape."""
    app = [sys.executable, str(ROOT / "tests/corpora/inductor_model.py")]

    def env(name: str, **extra: str) -> dict[str, str]:
        return {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor-{name}"),
                "TRITON_CACHE_DIR": str(tmp_path / f"triton-{name}"),
                "TUNED_KERNELS_CACHE_DIR": str(tmp_path / f"overlay-{name}"), **extra}  # fmt: skip

    bundle = tmp_path / "inductor.pb.zst"
    run = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--", *app, "small", "max-autotune"],
        env=env("capture"), capture_output=True, text=True, timeout=600
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    captured = json.loads(run.stdout.splitlines()[-1])
    entries = read_results(bundle).entries
    names = [e.kernel.name for e in entries]
    gemm_keys = [
        e.key for e in entries if e.kernel.name in ("inductor.mm", "inductor.addmm") and len(e.key) == 1
    ]
    assert captured["gemm_autotunings"] == len(gemm_keys) >= 2, (captured, names)
    assert "inductor.best_config" in names  # the tuned configs of the norm and the GELU kernels
    served = {}
    for model in ("small", "small+new"):  # choices only: the capture's compiled graph would answer "small"
        serve = env(model, TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), TUNED_KERNELS_COMPILED="0")
        out = subprocess.run(
            [*app, model, "max-autotune"], env=serve, capture_output=True, text=True, timeout=600
        )
        assert out.returncode == 0, out.stderr[-3000:]  # the output matched eager PyTorch
        served[model] = json.loads(out.stdout.splitlines()[-1])["gemm_autotunings"]
    assert served == {"small": 0, "small+new": 1}, served


def test_torch_compile_served_from_a_capture_generates_the_captured_kernels(tmp_path: Path) -> None:
    """Llama-style blocks, whose q, k and v (and gate and up) projections share a key while Inductor ends
    some of them on a Triton template (an epilogue fused into it) and others on ATen's kernel (the winner, or
    its fallback where a template's layout conflicts): the served process, benchmarking no GEMM choice, runs
    the same GEMMs on ATen, in the same order, and generates the same Triton kernels: each template fused
    with what its capture fused into it (no prologue the capture's benchmark turned down)."""
    app = [sys.executable, str(ROOT / "tests/corpora/inductor_model.py"), "llama-small", "max-autotune"]

    def run(name: str, *command: str, **extra: str) -> dict[str, list[str]]:
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor-{name}"),
               "TRITON_CACHE_DIR": str(tmp_path / f"triton-{name}"),
               "INDUCTOR_MODEL_CODE": str(tmp_path / f"{name}.json"), **extra}  # fmt: skip
        done = subprocess.run([*command, *app], env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]  # the output matched eager PyTorch
        if name == "served":
            assert json.loads(done.stdout.splitlines()[-1])["gemm_autotunings"] == 0
        return json.loads((tmp_path / f"{name}.json").read_text())  # type: ignore[no-any-return]

    bundle = tmp_path / "llama.pb.zst"
    captured = run("capture", sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--")
    # choices only: with its compiled graphs, the served process would generate no code
    served = run("served", TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), TUNED_KERNELS_COMPILED="0")
    assert any(k.startswith("triton_tem_") for k in captured["triton"]), captured  # templates were chosen
    assert served["extern"] == captured["extern"]
    assert served["triton"] == captured["triton"]


class ModelRuns:
    """tests/corpora/inductor_model.py run in folders of `root`, each run with a HOME and empty Inductor and
    Triton caches of its own; `run` gives its JSON line (it checked its outputs against eager PyTorch)."""

    def __init__(self, root: Path, *args: str) -> None:
        self.root, self.app = root, [sys.executable, str(ROOT / "tests/corpora/inductor_model.py"), *args]

    def run(self, name: str, *command: str, **extra: str) -> dict[str, Any]:
        folder = self.root / name
        folder.mkdir()
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(self.root / f"inductor-{name}"),
               "TRITON_CACHE_DIR": str(self.root / f"triton-{name}"), "HOME": str(folder), **extra}  # fmt: skip
        done = subprocess.run(
            [*command, *self.app], env=env, capture_output=True, text=True, timeout=600, cwd=folder
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_a_training_step_served_from_a_capture_compiles_no_graph(tmp_path: Path) -> None:
    """torch.compile, forward and backward: a capture keeps the compiled graphs; a fresh process in another
    folder with only that file and empty Inductor and Triton caches finds every graph in Inductor's caches
    (no FX-graph or AOTAutograd miss), times no GEMM choice, and matches eager PyTorch; with its saved frame
    loaded (the default) Dynamo traces nothing and the outputs are the same. (max-autotune's graphs:
    benchmarks/inductor_warm.py.)"""
    model = ModelRuns(tmp_path, "llama-small", "default", "train")
    bundle = tmp_path / "train.pb.zst"
    captured = model.run("capture", sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--")
    assert captured["fxgraph_misses"] >= 2  # a forward and a backward
    served = model.run("served", TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), TUNED_KERNELS_FRAMES="0")
    assert (served["fxgraph_misses"], served["autograd_misses"], served["gemm_choices_benchmarked"]) == (
        0,
        0,
        0,
    )
    assert served["fxgraph_hits"] == captured["fxgraph_misses"] and served["autograd_hits"] >= 1
    loaded = model.run("frames", TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))  # its saved frame
    assert (loaded["frames_traced"], loaded["fxgraph_misses"], loaded["autograd_misses"]) == (0, 0, 0)
    assert loaded["output_digest"] == served["output_digest"]


def _gpus() -> int:
    import torch

    return torch.cuda.device_count()


@pytest.mark.parametrize(
    "args", [("llama-small", "max-autotune-no-cudagraphs"), ("bmm-decoder", "default", "train")], ids="-".join
)
def test_graphs_captured_on_cuda0_are_served_on_cuda1_with_nothing_compiled_or_tuned(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """A capture made on the first GPU, served to the same program on the second: every graph found
    (FX-graph and AOTAutograd, forward and backward), moved to cuda:1 as it loads, nothing tuned at the first
    call, and the outputs those of eager PyTorch on cuda:1 (the program checks them) and of the capture."""
    if _gpus() < 2:
        pytest.skip("needs two GPUs")
    model = ModelRuns(tmp_path, *args)
    bundle = tmp_path / "model.pb.zst"
    captured = model.run("capture", sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--")
    served = model.run("served", TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), INDUCTOR_MODEL_GPU="1")
    assert (captured["device"], served["device"]) == ("cuda:0", "cuda:1")
    assert (served["fxgraph_misses"], served["autograd_misses"], served["gemm_choices_benchmarked"]) == (
        0,
        0,
        0,
    )
    assert served["fxgraph_hits"] == captured["fxgraph_misses"]
    assert served["first_call_work"] == dict.fromkeys(captured["first_call_work"], 0), served[
        "first_call_tuned"
    ]
    assert served["output_digest"] == captured["output_digest"]


def test_kernels_coordinate_descent_tuned_at_capture_run_their_configs_untuned_where_served(
    tmp_path: Path,
) -> None:
    """max-autotune tunes generated kernels by coordinate descent at its first call; served elsewhere, with
    empty caches, each finds the config its capture chose (the bundled `.best_config`, looked up under the
    capturing machine's cache path, and on torch up to 2.11 marked as found by coordinate descent:
    `autotune_cache.mend_read_best`) and runs it: no GPU benchmark, no generated kernel's autotuning, no
    coordinate descent at the first call, counted by the program itself. So with its saved frame loaded
    (no Dynamo trace: the frame's graph is the program's own, frame_compile.py) as with the graph caches
    alone, and the outputs of both are the capture's."""
    model = ModelRuns(tmp_path, "llama-small", "max-autotune-no-cudagraphs")
    bundle = tmp_path / "model.pb.zst"
    captured = model.run("capture", sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--")
    assert captured["first_call_work"]["coordinate_descent"] > 0  # there was something to serve
    untuned = {"gpu_benchmarks": 0, "generated_kernel_autotunes": 0, "coordinate_descent": 0}
    loaded = model.run("frames", TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
    assert (loaded["frames_traced"], loaded["fxgraph_misses"]) == (0, 0)
    assert loaded["first_call_work"] == untuned, (loaded["first_call_tuned"], captured["first_call_tuned"])
    served = model.run("served", TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), TUNED_KERNELS_FRAMES="0")
    assert (served["frames_traced"], served["fxgraph_misses"]) == (1, 0)
    assert served["first_call_work"] == untuned, (served["first_call_tuned"], captured["first_call_tuned"])
    assert loaded["output_digest"] == served["output_digest"] == captured["output_digest"]


def test_a_graph_compiled_before_tuned_kernels_was_turned_on_is_found_once_it_is(tmp_path: Path) -> None:
    """A machine warm from runs without tuned-kernels stays warm with it on: Inductor's keys leave its
    choices hook out (on this GPU's torch as on the CPU's)."""
    app = [sys.executable, str(ROOT / "tests/corpora/inductor_model.py"), "llama-small", "default"]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"),
           "TRITON_CACHE_DIR": str(tmp_path / "triton"), "HOME": str(tmp_path)}  # fmt: skip
    runs = []
    for switch in ("0", "1"):
        done = subprocess.run(
            app,
            env={**env, "TUNED_KERNELS": switch},
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        runs.append(json.loads(done.stdout.splitlines()[-1]))
    assert runs[0]["fxgraph_misses"] >= 1 and runs[1]["fxgraph_misses"] == 0, runs
    assert runs[1]["fxgraph_hits"] == runs[0]["fxgraph_misses"]


def test_the_builtin_gemm_corpus_captured_serves_max_autotune_linear_layers(tmp_path: Path) -> None:
    """tuned_kernels.aot.inductor_gemms under capture (a shard of the fp16 shapes): a fresh process
    compiling the same layers with max-autotune hits every one and misses none."""
    corpus = [
        sys.executable,
        "-m",
        "tuned_kernels.aot.inductor_gemms",
        "--dtypes",
        "float16",
        "--shard",
        "3/7",
    ]
    bundle = tmp_path / "corpus.pb.zst"
    for n, command in enumerate((["capture", "-o", str(bundle)], ["coverage", "--json", str(bundle)])):
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / f"inductor-{n}"),
               "TRITON_CACHE_DIR": str(tmp_path / f"triton-{n}"),
               "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o"),
               "TUNED_KERNELS_COMPILED": "0" if n else "1"}  # coverage of the choices (not the graphs)  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "tuned_kernels", *command, "--", *corpus], env=env,
                              capture_output=True, text=True, timeout=600)  # fmt: skip
        assert done.returncode == 0, done.stderr[-3000:]
    gemms = [e for e in read_results(bundle).entries if e.kernel.name == "inductor.mm" and len(e.key) == 1]
    assert len(gemms) == 6, [e.key for e in gemms]  # M=256 of the six (N, K) pairs, fp16 (and occurrences)
    covered = json.loads(done.stdout.splitlines()[-1])
    assert (covered["hits"], covered["misses"], covered["missed"]) == (6, 0, [])


def _lying(bundle: Path, how: str) -> None:
    """Rewrites `bundle` so that one compiled kernel lies, re-hashed so that only what it says gives it
    away: `warps` (its metadata launches twice the warps its binary was compiled for) or `key` (the plain
    kernel's files filed under the autotuned winner's cache key)."""
    import dataclasses
    import hashlib

    from tuned_kernels import model
    from tuned_kernels.results import write_results

    results = read_results(bundle)
    plain = next(e for e in results.entries if e.kernel.name == "compiled:add_one")
    winner = next(e for e in results.entries if e.kernel.name == "captured_app.scale")
    (artifact,) = plain.artifacts
    files = {f.name: results.blobs[f.sha256] for f in artifact.files}
    cache_key = artifact.cache_key
    if how == "warps":
        metadata = json.loads(files["add_one.json"])
        files["add_one.json"] = json.dumps({**metadata, "num_warps": 2 * metadata["num_warps"]}).encode()
        config = dataclasses.replace(artifact.config, num_warps=2 * artifact.config.num_warps)
    else:
        cache_key, config = winner.artifacts[0].cache_key, winner.artifacts[0].config
    listed = tuple(
        model.ArtifactFile(n, hashlib.sha256(d).hexdigest(), len(d)) for n, d in sorted(files.items())
    )
    lying = dataclasses.replace(artifact, files=listed, cache_key=cache_key, config=config)
    blobs = {**results.blobs, **{f.sha256: files[f.name] for f in listed}}
    entries = [dataclasses.replace(e, artifacts=(lying,)) if e is plain else e for e in results.entries]
    if how == "key":  # the winner's own kernel no longer answers for its key
        entries = [dataclasses.replace(e, artifacts=()) if e is winner else e for e in entries]
    write_results(bundle, model.Results(results.header, tuple(entries), blobs))


@pytest.mark.parametrize("how", ["warps", "key"])
def test_a_captured_compiled_kernel_that_lies_is_compiled_instead_with_one_warning(
    tmp_path: Path, how: str
) -> None:
    """The bundle's compiled kernel disagrees with its own entry (warps) or claims another kernel's cache
    key: a fresh process never launches it; Triton compiles that kernel, and the program's outputs hold."""
    app = [sys.executable, str(ROOT / "tests/corpora/captured_app.py")]
    bundle, _ = _captured(tmp_path, app)
    _lying(bundle, how)
    serve_env = {
        **os.environ,
        "TUNED_KERNELS": "1",
        "TUNED_KERNELS_PATH": str(bundle),
        "TRITON_CACHE_DIR": str(tmp_path / "empty"),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o"),
    }
    out = subprocess.run(app, env=serve_env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr[-3000:]  # its asserts held
    warned = [line for line in out.stderr.splitlines() if line.startswith("tuned-kernels: ")]
    assert len(warned) == 1 and "compiled kernel from" in warned[0], warned
    assert "COMPILED 0" not in out.stdout, out.stdout  # Triton compiled what was refused


DIRECT_PROGRAM = """
import torch, triton, triton.language as tl, tuned_kernels
from tuned_kernels.triton_edge.direct_launch import launch  # as the built-in ops launch their kernels
tuned_kernels.enable()


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"])
@triton.jit
def shifted(x_ptr, y_ptr, n, stride, add, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * stride, mask=offs < n)
    tl.store(y_ptr + offs, x + (add % 7), mask=offs < n)


def run(x, add):
    y = torch.empty(x.numel(), device="cuda", dtype=x.dtype)
    launch(shifted, lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),), x, y, x.numel(), x.stride(0), add)
    return y


flat = torch.randn(4097, device="cuda")
cases = {
    "plain": (flat[:1000], 1), "again": (flat[:1000], 3), "strided": (flat[:2000:2], 1),
    "fp16": (flat[:1000].half(), 1), "misaligned": (flat[1:1001], 1), "empty": (flat[:0], 1),
    "int past 2**31": (flat[:1000], 2**31 + 5), "int64 then int32": (flat[:1000], 2**31 - 1),
    "plain again": (flat[:1000], 1),
}
wrong = [name for name, (x, add) in cases.items() if not torch.equal(run(x, add), x + (add % 7))]
direct = shifted.__dict__["_tuned_kernels_direct"].launches.values()
print("WRONG", wrong, "DIRECT", sum(hasattr(d, "compiled") for d in direct))
"""


def test_direct_launches_never_run_a_kernel_compiled_for_other_arguments(tmp_path: Path) -> None:
    """One autotuned kernel, launched in turn with other strides, a half-precision tensor, a misaligned
    view, an empty tensor and ints past 2**31: each launch computes what eager PyTorch does (a kernel
    compiled for other arguments would not), and later launches of a seen specialization went direct."""
    script = tmp_path / "direct_app.py"
    script.write_text(DIRECT_PROGRAM)
    env = {
        **os.environ,
        "TRITON_CACHE_DIR": str(tmp_path / "cache"),
        "TUNED_KERNELS_CACHE_DIR": str(tmp_path / "o"),
    }
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(line for line in out.stdout.splitlines() if line.startswith("WRONG"))
    assert line.startswith("WRONG [] DIRECT") and int(line.rsplit(" ", 1)[1]) >= 1, (
        out.stdout + out.stderr[-2000:]
    )


HELION_PROGRAM = """
import sys, torch, tuned_kernels
from triton import knobs
compiled = []
knobs.compilation.listener = lambda *, cache_hit, **_: compiled.append(cache_hit)
from tuned_kernels.kernels import helion as kernels
for n in (1024, 4096):  # the built-in Helion corpus's quick RMS norm cases
    x = torch.randn(256, n, device="cuda", dtype=torch.float16)
    w = torch.randn(n, device="cuda", dtype=torch.float16)
    ref = (x.double() * torch.rsqrt(x.double().pow(2).mean(-1, keepdim=True) + 1e-5) * w.double())
    assert torch.allclose(kernels.rms_norm(x, w).double(), ref, atol=2e-2, rtol=1e-2)
if "--stats" in sys.argv:
    s = tuned_kernels.stats()
    print(s["hits"], s["misses"], s["configs_benchmarked"], compiled.count(False))
"""


def test_the_builtin_helion_corpus_tuned_and_a_capture_serve_helion_kernels_without_search(
    tmp_path: Path,
) -> None:
    """`tune --corpus helion` runs Helion's own search for each case and keeps its winner with the kernel
    Triton compiled for it; a program served by that file neither searches nor compiles. A capture of the
    program (Helion's local cache of the tune warm: no search; Triton's empty) serves it the same way."""
    helion_env = {**os.environ, "HELION_AUTOTUNE_EFFORT": "quick", "HELION_AUTOTUNE_BENCHMARK_SUBPROCESS": "0",
                  "HELION_CACHE_DIR": str(tmp_path / "helion"),
                  "TRITON_CACHE_DIR": str(tmp_path / "triton")}  # fmt: skip
    tuned = tmp_path / "helion.pb"
    command = [
        "tune",
        "--corpus",
        "helion",
        "--kernels",
        "helion_rms_norm",
        "--shapes",
        "quick",
        "-o",
        str(tuned),
    ]
    out = subprocess.run([sys.executable, "-m", "tuned_kernels", *command], env=helion_env, capture_output=True,
                         text=True, cwd=tmp_path, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    entries = read_results(tuned).entries
    configs = [e for e in entries if e.kernel.name == "helion.tuned_kernels.kernels.helion.rms_norm"]
    assert len(configs) == 2 and all(e.configs_benchmarked > 1 for e in configs), entries
    assert any(e.artifacts for e in entries), "no compiled kernel kept"

    captured = tmp_path / "captured.pb"
    app = [sys.executable, "-c", HELION_PROGRAM]
    capture = [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(captured), "--", *app]
    # Triton's cache empty: a capture keeps the kernels Triton compiles, not those its cache holds
    capture_env = {**helion_env, "TRITON_CACHE_DIR": str(tmp_path / "triton-capture")}
    out = subprocess.run(capture, env=capture_env, capture_output=True, text=True, cwd=tmp_path, timeout=600)
    assert out.returncode == 0 and "Starting autotuning" not in out.stderr, out.stderr[-3000:]

    for bundle in (tuned, captured):
        serve_env = {**os.environ, "TUNED_KERNELS": "1", "TUNED_KERNELS_PATH": str(bundle),
                     "TRITON_CACHE_DIR": str(tmp_path / f"empty-{bundle.stem}"),
                     "HELION_CACHE_DIR": str(tmp_path / f"no-helion-{bundle.stem}"),
                     "TUNED_KERNELS_CACHE_DIR": str(tmp_path / f"overlay-{bundle.stem}")}  # fmt: skip
        out = subprocess.run([*app, "--stats"], env=serve_env, capture_output=True, text=True, cwd=tmp_path,
                             timeout=600)  # fmt: skip
        assert out.returncode == 0 and "Starting autotuning" not in out.stderr, out.stderr[-3000:]
        # 2 hits, 0 misses, 0 configs benchmarked, 0 kernels compiled
        assert out.stdout.split() == ["2", "0", "0", "0"], (bundle.name, out.stdout, out.stderr[-2000:])
