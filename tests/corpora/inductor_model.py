"""A torch.compile program for the GPU: `python inductor_model.py MODEL MODE [train]`, MODEL one of those `model`
makes, MODE a torch.compile mode (`max-autotune-no-cudagraphs`, `default`, ...); `train`: each step is a
forward and a backward. Runs the model once (the first call: compiling and Inductor's autotuning) and then for
a steady state (ms per step: the median of several timed blocks; and the GPU time of a step's kernels,
by torch's profiler), checks the output (and, training, a
gradient) against eager PyTorch, and prints one JSON line: first-call seconds, the GEMM autotunings Inductor
ran (counted by its own feedback savers), ms per step, Inductor's counts of graphs found in its caches and
compiled, and a digest of the output (the same kernels on the same inputs give the same bits).
With INDUCTOR_MODEL_CODE=path, it also writes there the kernels of the code Inductor generated, in order: its
Triton kernels by name and the extern kernels (ATen's GEMMs) it calls."""

from __future__ import annotations

import hashlib
import json
import os
import re
import statistics
import sys
import time
from typing import Any

import torch
from torch import nn

TOKENS = 512
STEPS_PER_BLOCK, STEP_BLOCKS = 50, 7  # ms per step: the median of 7 blocks of 50 steps
# the GPU time of a step's kernels: the median of 5 blocks of 20 profiled steps
KERNEL_STEPS, KERNEL_BLOCKS = 20, 5


class MLPBlock(nn.Module):
    def __init__(self, dim: int, hidden: int) -> None:
        super().__init__()
        self.norm, self.up, self.down = nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(nn.functional.gelu(self.up(self.norm(x))))


class DecoderBlock(nn.Module):
    """Llama-style: RMSNorm, attention (q, k, v, o projections; SDPA), RMSNorm, SwiGLU."""

    def __init__(self, dim: int, hidden: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.RMSNorm(dim), nn.RMSNorm(dim)
        self.q, self.k, self.v, self.o = (nn.Linear(dim, dim, bias=False) for _ in range(4))
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        q, k, v = (p(h).unflatten(-1, (self.heads, -1)).transpose(0, 1) for p in (self.q, self.k, self.v))
        attention = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(attention.transpose(0, 1).flatten(1))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class BmmDecoderBlock(nn.Module):
    """A decoder block as often written outside this project: attention through torch.bmm, a causal mask
    by masked_fill and a softmax; RMSNorm; SwiGLU; a 3-D input (batch, tokens, width)."""

    def __init__(self, dim: int, hidden: int, heads: int, sdpa: bool = False) -> None:
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.norm1, self.norm2 = nn.RMSNorm(dim), nn.RMSNorm(dim)
        self.qkv, self.o = nn.Linear(dim, 3 * dim, bias=False), nn.Linear(dim, dim, bias=False)
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            attention = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            q, k, v = (z.reshape(b * self.heads, t, -1) for z in (q, k, v))
            scores = torch.bmm(q, k.transpose(1, 2)) / (q.shape[-1] ** 0.5)
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            attention = torch.bmm(scores.masked_fill(mask, float("-inf")).softmax(-1), v)
        x = x + self.o(attention.reshape(b, self.heads, t, -1).transpose(1, 2).reshape(b, t, d))
        h = self.norm2(x)
        return x + self.down(nn.functional.silu(self.gate(h)) * self.up(h))


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()

        def stage(cin: int, cout: int) -> nn.Module:
            return nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride=2, padding=1), nn.BatchNorm2d(cout), nn.ReLU()
            )

        self.features = nn.Sequential(stage(3, 64), stage(64, 128), stage(128, 256), stage(256, 512))
        self.head = nn.Linear(512, 1000)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean((2, 3)))


class RoutedMLP(nn.Module):
    """Mixture of experts, each token sent to its top-2 of 8 experts with a fixed capacity per expert
    (Switch-Transformer style dispatch: dense one-hot tensors, so shapes stay static)."""

    def __init__(self, dim: int, hidden: int, experts: int = 8, top: int = 2) -> None:
        super().__init__()
        self.top, self.experts = top, experts
        self.router = nn.Linear(dim, experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(experts, dim, hidden) / dim**0.5)
        self.w_out = nn.Parameter(torch.randn(experts, hidden, dim) / hidden**0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = x.shape[0]
        capacity = 2 * tokens * self.top // self.experts
        gates, chosen = self.router(x).softmax(-1).topk(self.top, dim=-1)
        one_hot = nn.functional.one_hot(chosen, self.experts).to(x.dtype)  # (tokens, top, experts)
        position = (one_hot.flatten(0, 1).cumsum(0).view_as(one_hot) - 1) * one_hot
        keep = one_hot * (position < capacity).to(x.dtype)
        slots = nn.functional.one_hot(position.long().clamp(0, capacity - 1), capacity).to(x.dtype)
        dispatch = torch.einsum("tke,tkec->tec", keep, slots)  # (tokens, experts, capacity)
        combine = torch.einsum("tk,tke,tkec->tec", gates, keep, slots)
        expert_in = torch.einsum("tec,td->ecd", dispatch, x)
        expert_out = torch.bmm(nn.functional.gelu(torch.bmm(expert_in, self.w_in)), self.w_out)
        return x + torch.einsum("tec,ecd->td", combine, expert_out)


def model(name: str) -> tuple[nn.Module, int]:
    """The model and its width."""
    if name == "mlp":  # two blocks: four GEMMs of two shapes
        return nn.Sequential(MLPBlock(4096, 11008), MLPBlock(4096, 11008)), 4096
    if name == "mlp+new":  # the same, and a layer of a shape the mlp does not have
        return nn.Sequential(MLPBlock(4096, 11008), MLPBlock(4096, 11008), nn.Linear(4096, 2048)), 4096
    if name == "llama":
        return nn.Sequential(*(DecoderBlock(4096, 11008, 32) for _ in range(4))), 4096
    if name == "decoder":  # two blocks, attention and SwiGLU (bf16)
        return nn.Sequential(*(DecoderBlock(2048, 5632, 16) for _ in range(2))), 2048
    if name == "bmm-decoder":  # written elsewhere: bmm attention, 3-D input, built on the CPU
        return nn.Sequential(*(BmmDecoderBlock(2048, 5632, 16) for _ in range(2))), 2048
    if name == "sdpa-decoder":  # the same with SDPA attention
        return nn.Sequential(*(BmmDecoderBlock(2048, 5632, 16, sdpa=True) for _ in range(2))), 2048
    if name == "conv":
        return ConvNet(), 3
    if name == "moe":
        return nn.Sequential(RoutedMLP(2048, 4096), RoutedMLP(2048, 4096)), 2048
    if name == "mlp-dynamic":  # the batch dimension marked dynamic
        return nn.Sequential(MLPBlock(2048, 5632), MLPBlock(2048, 5632)), 2048
    if name == "llama-small":  # for tests: GEMMs sharing keys (q, k, v; gate, up), in two blocks
        return nn.Sequential(*(DecoderBlock(1024, 2816, 8) for _ in range(2))), 1024
    if name == "small":  # for tests: quick to autotune
        return nn.Sequential(MLPBlock(1024, 2816)), 1024
    if name == "small+new":
        return nn.Sequential(MLPBlock(1024, 2816), nn.Linear(1024, 512)), 1024
    raise SystemExit(f"unknown model {name}")


def first_call(compiled: nn.Module, x: torch.Tensor) -> torch.Tensor:
    path = os.environ.get("INDUCTOR_MODEL_CODE")
    if not path:
        return compiled(x)  # type: ignore[no-any-return]
    from torch._inductor.utils import run_and_get_code

    out, sources = run_and_get_code(compiled, x)
    code = "\n".join(sources)
    kernels = {
        "triton": re.findall(r"^(triton_\w+) = async_compile\.triton\(", code, re.M),
        "extern": re.findall(r"\bextern_kernels\.(\w+)\(", code),
    }
    with open(path, "w") as f:
        json.dump(kernels, f)
    return out  # type: ignore[no-any-return]


DTYPES = {name: torch.bfloat16 for name in ("decoder", "bmm-decoder", "sdpa-decoder", "moe")}  # others: fp16
BUILT_ON_CPU = {"bmm-decoder", "sdpa-decoder", "conv"}  # then moved with .cuda(), as many programs do


def example_input(name: str, width: int, dtype: torch.dtype) -> torch.Tensor:
    if name in ("bmm-decoder", "sdpa-decoder"):
        return torch.randn(4, TOKENS, width, device="cuda", dtype=dtype)
    if name == "conv":
        return torch.randn(32, 3, 128, 128, device="cuda", dtype=dtype)
    if name == "mlp-dynamic":
        x = torch.randn(8, TOKENS // 4, width, device="cuda", dtype=dtype)
        torch._dynamo.mark_dynamic(x, 0)
        return x
    return torch.randn(TOKENS, width, device="cuda", dtype=dtype)


class RealWork:
    """What Inductor really does in this process: its own counters also replay, on a graph found in its
    cache, what that graph's first compile did (codecache's counter_deltas), so they cannot tell."""

    def __init__(self) -> None:
        from torch._inductor.runtime import benchmarking, coordinate_descent_tuner, triton_heuristics

        self.counts = {"gpu_benchmarks": 0, "generated_kernel_autotunes": 0, "coordinate_descent": 0}
        self.kernels: list[str] = []
        self._count(benchmarking.InductorBenchmarker, "benchmark_gpu", "gpu_benchmarks")
        self._count(triton_heuristics.CachingAutotuner, "benchmark_all_configs", "generated_kernel_autotunes")
        self._count(coordinate_descent_tuner.CoordescTuner, "autotune", "coordinate_descent")

    def _count(self, cls: type, method: str, name: str) -> None:
        original = getattr(cls, method)

        def counted(*args: object, **kwargs: object) -> object:
            self.counts[name] += 1
            if name != "gpu_benchmarks" and len(self.kernels) < 20:  # which kernel, and what its cache said
                owner = args[0]
                meta = getattr(owner, "inductor_meta", None) or {}
                info = getattr(owner, "autotune_cache_info", None) or {}
                kernel = meta.get("kernel_name", getattr(owner, "name", "?"))
                launchers = [str(getattr(x, "config", "?")) for x in getattr(owner, "launchers", []) or []]
                self.kernels.append(
                    f"{name}:{kernel}:{len(launchers)} launchers:{info.get('autotune_cache_state', '')}"
                    f":{'|'.join(launchers)[:400]}"
                )
            return original(*args, **kwargs)

        setattr(cls, method, counted)


class Sampler:
    """Diagnostics: the main thread's stack every millisecond (or when the sampling thread next gets the
    interpreter), written as folded stacks with the microseconds since the look before: wall-clock time by
    where it was spent, waits included."""

    def __init__(self, path: str) -> None:
        import collections
        import threading

        self.path, self.main = path, threading.get_ident()
        self.stacks: collections.Counter[str] = collections.Counter()
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        last = time.perf_counter()
        while not self.done.wait(0.001):
            now = time.perf_counter()
            frame = sys._current_frames().get(self.main)
            names = []
            while frame is not None:
                code = frame.f_code
                names.append(f"{code.co_filename.rsplit('site-packages/', 1)[-1]}:{code.co_name}")
                frame = frame.f_back
            self.stacks[";".join(reversed(names))] += round((now - last) * 1e6)  # µs since the last look
            last = now

    def stop(self) -> None:
        self.done.set()
        self.thread.join()
        with open(self.path, "w") as f:
            f.writelines(f"{stack} {count}\n" for stack, count in self.stacks.most_common())


ROUTED = {"moe"}  # a token's top-2 experts: a near tie can go either way between compiled and eager bf16
ROUTED_ROWS_OFF = 0.01  # the share of tokens whose output may differ so


def as_eager(name: str, out: torch.Tensor, expected: torch.Tensor) -> None:
    """The compiled output is eager PyTorch's, within bf16/fp16 tolerance; for a routed model, on every
    token but the few (at most 1 %) that a near tie between two experts sent elsewhere."""
    if name not in ROUTED:
        torch.testing.assert_close(out, expected, atol=5e-2, rtol=5e-2)
        return
    off = ~torch.isclose(out.float(), expected.float(), atol=5e-2, rtol=5e-2)
    rows = int(off.flatten(0, -2).any(-1).sum())
    assert rows <= ROUTED_ROWS_OFF * out.flatten(0, -2).shape[0], f"{rows} tokens differ from eager"


def step(compiled: nn.Module, x: torch.Tensor, train: bool) -> torch.Tensor:
    out: torch.Tensor = compiled(x)
    if train:
        out.float().pow(2).mean().backward()
    return out


def timed_steps(compiled: nn.Module, x: torch.Tensor, train: bool) -> float:
    """ms per step over one block of steps, timed on the GPU."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(STEPS_PER_BLOCK):
        step(compiled, x, train)
    end.record()
    torch.cuda.synchronize()
    return float(start.elapsed_time(end)) / STEPS_PER_BLOCK


def kernel_time(compiled: nn.Module, x: torch.Tensor, train: bool) -> tuple[float, dict[str, float]]:
    """The GPU time of one step's kernels (ms, by torch's profiler), and each kernel's (ms a step, summed
    over its launches; of the last block). A step of a few hundred microseconds is bound by the host
    launching its kernels, so its wall time measures the host as much as the kernels; this is the kernels'
    own time, which the host's speed does not move."""
    from torch.autograd import DeviceType

    times: list[float] = []
    by_name: dict[str, float] = {}
    for _ in range(KERNEL_BLOCKS):
        profile = _profiled(compiled, x, train, KERNEL_STEPS)
        by_name = {}
        for event in (e for e in profile.events() if e.device_type == DeviceType.CUDA):
            ms = event.time_range.elapsed_us() / 1000 / KERNEL_STEPS
            by_name[event.name] = by_name.get(event.name, 0.0) + ms
        times.append(sum(by_name.values()))
    return float(statistics.median(times)), {name: round(ms, 5) for name, ms in sorted(by_name.items())}


def write_profile(compiled: nn.Module, x: torch.Tensor, train: bool, path: str) -> None:
    """Diagnostics: the kernels of three steps, by GPU time, as a table in `path`."""
    profile = _profiled(compiled, x, train, 3)
    table = profile.key_averages().table(sort_by="cuda_time_total", row_limit=40, max_name_column_width=90)
    with open(path, "w") as f:
        f.write(table)


def _profiled(compiled: nn.Module, x: torch.Tensor, train: bool, steps: int) -> Any:
    """`steps` steps under torch's profiler (the GPU's activity), waited for: the profile."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as profile:
        for _ in range(steps):
            step(compiled, x, train)
        torch.cuda.synchronize()
    return profile


def graph_counts() -> dict[str, int]:
    from torch._dynamo.utils import counters

    return {
        "fxgraph_hits": counters["inductor"]["fxgraph_cache_hit"],
        "fxgraph_misses": counters["inductor"]["fxgraph_cache_miss"],
        "autograd_hits": counters["aot_autograd"]["autograd_cache_hit"],
        "autograd_misses": counters["aot_autograd"]["autograd_cache_miss"],
        "frames_traced": counters["frames"]["total"],  # Dynamo's traces (0: every frame loaded, saved)
    }


def main() -> None:
    name, mode = sys.argv[1], sys.argv[2]
    train = sys.argv[3:] == ["train"]
    if os.environ.get("INDUCTOR_MODEL_GPU"):  # the GPU "cuda" names here (cuda:1: a capture's graphs moved)
        torch.cuda.set_device(int(os.environ["INDUCTOR_MODEL_GPU"]))
    from torch._inductor import select_algorithm

    autotunings: list[tuple[str, int]] = []
    select_algorithm.add_feedback_saver(lambda timings, op, *_: autotunings.append((op, len(timings))))
    real = RealWork()
    torch.manual_seed(0)
    dtype = DTYPES.get(name, torch.float16)
    if name in BUILT_ON_CPU:
        net, width = model(name)
        net = net.cuda()
    else:
        with torch.device("cuda"):  # initialised where it runs: seconds less than on the CPU
            net, width = model(name)
    net = net.to(dtype).train(train)
    x = example_input(name, width, dtype)
    compiled = torch.compile(net, mode=mode)
    # Triton's build key found before the timer in every mode: with tuned-kernels on it is found as Inductor
    # is imported (the compiler fingerprint), without it inside the first call (Inductor's first graph key)
    from triton.runtime.cache import triton_key

    triton_key()
    profile_path = os.environ.get("INDUCTOR_MODEL_PSTATS")  # diagnostics: where the first call's time goes
    if profile_path:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    sampler = (
        Sampler(os.environ["INDUCTOR_MODEL_SAMPLES"]) if os.environ.get("INDUCTOR_MODEL_SAMPLES") else None
    )
    with torch.set_grad_enabled(train):
        t0 = time.perf_counter()
        out = first_call(compiled, x) if not train else step(compiled, x, train)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        first_call_work = dict(real.counts)
        pools = len(getattr(sys.modules.get("torch._inductor.async_compile"), "_pool_set", ()))
        graph_timing = sys.modules.get("tuned_kernels.inductor_edge.config_timing")  # inside a capture
        configs_graph_timed = graph_timing.configs_timed() if graph_timing is not None else (0, 0)
        first_call_tuned = list(real.kernels)
        if sampler is not None:
            sampler.stop()
        if profile_path:
            profiler.disable()
            profiler.dump_stats(profile_path)
        digest = hashlib.sha256(out.detach().float().cpu().numpy().tobytes()).hexdigest()[:16]
        if train:
            weight = next(net.parameters())
            grad, weight.grad = weight.grad, None
            for p in net.parameters():
                p.grad = None
            expected = step(net, x, train)
            torch.testing.assert_close(grad, weight.grad, atol=5e-2, rtol=5e-2)
        else:
            expected = net(x)
        as_eager(name, out, expected)
        for _ in range(10):
            step(compiled, x, train)
        step_ms = statistics.median(timed_steps(compiled, x, train) for _ in range(STEP_BLOCKS))
        kernel_ms, kernels = kernel_time(compiled, x, train)
        if os.environ.get("INDUCTOR_MODEL_PROFILE"):
            write_profile(compiled, x, train, os.environ["INDUCTOR_MODEL_PROFILE"])
    print(
        json.dumps(
            {
                "model": name,
                "mode": mode,
                "train": train,
                "device": str(x.device),
                "first_call_s": round(first, 3),
                "gemm_autotunings": len(autotunings),
                "gemm_choices_benchmarked": sum(n for _, n in autotunings),
                "step_ms": round(step_ms, 4),
                "kernel_ms": round(kernel_ms, 4),  # the GPU time of a step's kernels
                "kernels": kernels,  # each kernel's GPU time a step (ms)
                "output_digest": digest,
                "first_call_work": first_call_work,
                "first_call_tuned": first_call_tuned,
                "compile_pools_at_first_call": pools,  # Inductor's compile-worker pools started by then
                # generated kernels' configs timed from CUDA graphs at the first call, and of those by do_bench
                "configs_graph_timed": list(configs_graph_timed),
                **graph_counts(),
            }
        )
    )


if __name__ == "__main__":
    main()
