"""A missed key at run time: tuned-kernels' measuring engine vs Triton's own autotuning (GPU).

For three kernels (the built-in copy-engine matmul, a matmul written as Triton's tutorial writes it, the
built-in softmax), each in a fresh process with an empty Triton cache and no bundle: the time from the first
launch to its result, how many kernels were compiled, and the winner (with --repeats N, the run of median
time of N); then one more process times both winners in full on the same inputs.
`python benchmarks/miss.py [--repeats N] [--json OUT]` prints the rows side by side.
Children: `python benchmarks/miss.py run KERNEL triton|ours`, `python benchmarks/miss.py compare KERNEL A B`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl

KERNELS = ("copy-engine matmul", "tutorial matmul", "softmax")


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_M": 8}, num_stages=s, num_warps=4)
        for m in (64, 128)
        for n in (64, 128)
        for k in (32, 64)
        for s in (3, 4)
    ],
    key=["M", "N", "K"],
)
@triton.jit
def tutorial_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn,
                           stride_cm, stride_cn, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                           BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):  # fmt: skip
    pid = tl.program_id(0)
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    group = GROUP_M * num_pid_n
    first_m = (pid // group) * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + ((pid % group) % size_m)
    pid_n = (pid % group) // size_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16), mask=(rows[:, None] < M) & (cols[None, :] < N))


def tutorial_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    (M, K), (_, N) = a.shape, b.shape
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    tutorial_matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                                 c.stride(0), c.stride(1))  # fmt: skip
    return c


def workload(name: str) -> tuple[Any, Callable[[], Any], Callable[[], Any]]:
    """The autotuned kernel, the op's call on fresh inputs, and its reference."""
    if name == "copy-engine matmul":
        from tuned_kernels.kernels import matmul, tma_matmul

        a, b = torch.randn(100, 4096, device="cuda").half(), torch.randn(4096, 4096, device="cuda").half()
        return tma_matmul.matmul_tma_kernel, lambda: matmul.triton_matmul(a, b), lambda: a @ b
    if name == "tutorial matmul":
        a, b = torch.randn(512, 4096, device="cuda").half(), torch.randn(4096, 4096, device="cuda").half()
        return tutorial_matmul_kernel, lambda: tutorial_matmul(a, b), lambda: a @ b
    from tuned_kernels.kernels import rowwise

    x = torch.randn(4096, 4096, device="cuda").half()
    return rowwise.softmax_kernel, lambda: rowwise.softmax(x), lambda: torch.softmax(x.float(), -1).half()


def described(config: Any) -> dict[str, Any]:
    return {"kwargs": dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages}


def run(name: str, mode: str) -> dict[str, Any]:
    """The first launch of a missed key, to its result (in this fresh process); Triton's autotuner says how
    many candidates it timed."""
    from tuned_kernels.triton_edge.counters import counting_triton

    counts = counting_triton()
    kernel, call, reference = workload(name)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = call()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    torch.testing.assert_close(out.float(), reference().float(), atol=5e-2, rtol=5e-2)
    timed = getattr(kernel, "configs_timings", None) or {}  # Triton's autotuner keeps every config's timing
    candidates = len(timed) if mode == "triton" else 0
    import tuned_kernels

    measuring = tuned_kernels.stats()["seconds_tuning"] if mode == "ours" else None
    return {"seconds": seconds, "compiled": int(counts["compiled"]), "candidates": candidates, "measuring": measuring,
            "winner": described(kernel.best_config)}  # fmt: skip


def compare(name: str, winners: list[dict[str, Any]]) -> list[float]:
    """Each winner's median time in ms (Triton's do_bench, turns taken three times, in turn first), on the same
    inputs; one config won by both is timed once (timing one config twice here differs by up to 17 %)."""
    from triton.testing import do_bench

    from tuned_kernels.triton_edge.launch import forced_config

    kernel, call, _ = workload(name)
    distinct = [w for i, w in enumerate(winners) if w not in winners[:i]]
    configs = [
        triton.Config(w["kwargs"], num_warps=w["num_warps"], num_stages=w["num_stages"]) for w in distinct
    ]
    for config in configs:  # the copy-engine kernel's configs carry the pre-hook that sets its descriptors
        config.pre_hook = next((c.pre_hook for c in kernel.configs if c.kwargs == config.kwargs), None)
    times: list[list[float]] = [[] for _ in configs]
    for turn in range(3):
        for i in sorted(range(len(configs)), reverse=turn % 2 == 1):
            with forced_config(kernel, configs[i]):
                times[i].append(float(do_bench(call)))
    medians = [statistics.median(t) for t in times]
    return [medians[distinct.index(w)] for w in winners]


def child(argv: list[str], env: dict[str, str]) -> Any:
    proc = subprocess.run([sys.executable, __file__, *argv], env=env, capture_output=True, text=True,
                          timeout=600)  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError(f"{argv}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="where to write the results")
    parser.add_argument(
        "--repeats", type=int, default=1, help="fresh processes per kernel and mode (the median)"
    )
    args = parser.parse_args()
    rows, cpus = {}, os.cpu_count()
    for name in KERNELS:
        found = {}
        for mode in ("triton", "ours"):
            runs = []
            for _ in range(args.repeats):
                with tempfile.TemporaryDirectory(prefix="tuned-kernels-miss-") as tmp:
                    env = {**os.environ, "TRITON_CACHE_DIR": f"{tmp}/triton"}
                    env.pop("TUNED_KERNELS", None)
                    if mode == "ours":
                        env.update(TUNED_KERNELS="1", TUNED_KERNELS_PATH=f"{tmp}/none",
                                   TUNED_KERNELS_CACHE_DIR=f"{tmp}/overlay")  # fmt: skip
                    runs.append(child(["run", name, mode], env))
            runs.sort(key=lambda r: r["seconds"])
            found[mode] = {**runs[len(runs) // 2], "every_seconds": [round(r["seconds"], 3) for r in runs],
                           "winners": [r["winner"] for r in runs]}  # fmt: skip
        ms = child(["compare", name, json.dumps([found["triton"]["winner"], found["ours"]["winner"]])],
                   {k: v for k, v in os.environ.items() if k != "TUNED_KERNELS"})  # fmt: skip
        rows[name] = {**found, "winner_ms": {"triton": ms[0], "ours": ms[1]}}
        ratio = found["ours"]["seconds"] / found["triton"]["seconds"]
        theirs, ours = found["triton"], found["ours"]
        print(f"| {name} | {theirs['candidates']} configs "
              f"| Triton {theirs['seconds']:.2f} s ({theirs['compiled']} compiled; {theirs['every_seconds']}) "
              f"| ours {ours['seconds']:.2f} s ({ours['compiled']} compiled, {ours['measuring']:.2f} s measuring; "
              f"{ours['every_seconds']}) "
              f"| {ratio:.2f}x | winners {ms[0]:.4f} vs {ms[1]:.4f} ms ({ms[1] / ms[0]:.3f}x) |",
              flush=True)  # fmt: skip
    result = {"environment": {"cpus": cpus, "device": torch.cuda.get_device_name(), "torch": torch.__version__,
                              "triton": triton.__version__, "repeats": args.repeats}, "miss": rows}  # fmt: skip
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "run":
        print(json.dumps(run(sys.argv[2], sys.argv[3])))
    elif len(sys.argv) > 1 and sys.argv[1] == "compare":
        print(json.dumps(compare(sys.argv[2], json.loads(sys.argv[3]))))
    else:
        main()
