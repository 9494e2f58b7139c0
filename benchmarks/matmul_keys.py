"""The Triton matmul and `ops.matmul` against torch.matmul (cuBLAS) on every full-matmul key, one process, a
bundle serving the kernels' configs and the recorded choices:
`TUNED_KERNELS_PATH=benchmarks/matmul-full-h100-triton3.6.0.pb.zst python benchmarks/matmul_keys.py [OUT]`.

Per key (84: fp16 and bf16, six Llama-3 (N, K) pairs, M from 1 to 8192): device time (`do_bench` medians, L2
flushed, what the tuner times) of the Triton matmul (`triton_matmul`: the split-K kernel up to 64 rows, above
them the copy engine's kernel on Hopper, else the tile kernel), torch.matmul and `ops.matmul`; the kernel
alone (the three taking turns, with the device held busy before each call so that a launch slower than the
kernel is never inside the events: do_bench's L2 flush lasts about as long as Triton 3.6 takes to launch on
the H100 machine's CPU); each one's host time to issue a call; the launch-inclusive time (the longer of device
and host: what a program calling it in a loop gets); the choice device time alone and launch-inclusive time
make, and the choice the bundle recorded. On decode keys (M <= 64) a kernel that only reads B takes turns
with the three calls: the memory floor no implementation can beat by much (benchmarks/read_floor.py). OUT is
rewritten after each key, so a cut-off run keeps what it measured."""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Callable
from typing import Any

import torch
from read_floor import fastest_reader  # this folder: the script's own
from tuned_kernels.aot.kernels.builtin import LLM_M, LLM_NK

import tuned_kernels
from tuned_kernels.triton_edge.benchmarker import DeviceBenchmarker, LaunchInclusiveBenchmarker

DECODE_M = (1, 16, 64)


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def kernel_us(fns: dict[str, Callable[[], object]], reps: int = 30) -> dict[str, float]:
    """Median device time of one call of each of `fns`, L2 flushed and the device kept busy (a spin
    kernel) while the call is issued, so the events time the kernels and never wait for the host. The calls
    take turns (one of each per round): a GPU whose clocks drift during the run slows each of them alike."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    events = {
        name: [
            (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(reps)
        ]
        for name in fns
    }
    for fn in fns.values():
        fn()
    for i in range(reps):
        for name, fn in fns.items():
            start, end = events[name][i]
            flush.zero_()
            torch.cuda._sleep(1_000_000)  # ~0.5 ms at H100 clocks: longer than any launch here
            start.record()
            fn()
            end.record()
    torch.cuda.synchronize()
    return {
        name: statistics.median(s.elapsed_time(e) for s, e in pairs) * 1e3 for name, pairs in events.items()
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def ratios(field: str, impl: str, decode: bool | None = None) -> list[float]:
        return [
            r[field]["torch"] / r[field][impl]
            for r in rows
            if decode is None or (r["M"] in DECODE_M) == decode
        ]

    out: dict[str, Any] = {"keys": len(rows)}
    for field in ("device_us", "kernel_us", "inclusive_us"):
        for impl in ("triton", "ops"):
            every, decode = ratios(field, impl), ratios(field, impl, decode=True)
            out[f"{impl}_vs_cublas_{field[:-3]}"] = {
                "geomean": geomean(every),
                "min": min(every, default=float("nan")),
                "decode_min": min(decode, default=float("nan")),
                "decode_geomean": geomean(decode),
            }
    out["choices_flipped_by_launch"] = sum(r["choice_device"] != r["choice_inclusive"] for r in rows)
    # how far any kernel could go: cuBLAS over the fastest of (the read floor, the two matmuls) where the
    # floor was timed (decode keys), else over the faster of the two
    floored = [r for r in rows if "floor" in r["kernel_us"]]
    out["cublas_vs_read_floor"] = {
        "decode_geomean": geomean([r["kernel_us"]["torch"] / r["kernel_us"]["floor"] for r in floored]),
        "decode_max": max((r["kernel_us"]["torch"] / r["kernel_us"]["floor"] for r in floored), default=0.0),
    }
    out["best_of_two_kernel_geomean"] = geomean(
        [r["kernel_us"]["torch"] / min(r["kernel_us"]["triton"], r["kernel_us"]["torch"]) for r in rows]
    )
    out["bound_kernel_geomean"] = geomean(
        [r["kernel_us"]["torch"] / min(r["kernel_us"].values()) for r in rows]
    )
    return out


def main() -> None:
    tuned_kernels.enable()
    from tuned_kernels.kernels.matmul import MATMUL_CHOICE, matmul, triton_matmul

    device = DeviceBenchmarker(warmup_ms=10, rep_ms=40)
    inclusive = LaunchInclusiveBenchmarker(device, batches=15)
    rows: list[dict[str, Any]] = []
    for dtype in (torch.float16, torch.bfloat16):
        for n, k in LLM_NK:
            for m in LLM_M:
                a = torch.randn(m, k, device="cuda", dtype=dtype) * k**-0.5
                b = torch.randn(k, n, device="cuda", dtype=dtype)
                before = set(MATMUL_CHOICE.cache)
                fns = {
                    "triton": lambda a=a, b=b: triton_matmul(a, b),
                    "torch": lambda a=a, b=b: torch.matmul(a, b),
                    "ops": lambda a=a, b=b: matmul(a, b),  # decided once here: the bundle's choice
                }
                reference = fns["torch"]().float()
                error = (fns["triton"]().float() - reference).abs().max().item()
                fns["ops"]()
                recorded = [MATMUL_CHOICE.cache[key] for key in set(MATMUL_CHOICE.cache) - before]
                dev = {name: device(fn) * 1e3 for name, fn in fns.items()}
                if m in DECODE_M:  # the floor: a kernel that only reads B (benchmarks/read_floor.py)
                    read, _ = fastest_reader(b, lambda calls: kernel_us(calls, reps=10))
                    alone = kernel_us({**fns, "floor": read})
                else:
                    alone = kernel_us(fns)
                host = {name: inclusive.host_ms(fn) * 1e3 for name, fn in fns.items()}
                incl = {name: max(dev[name], host[name]) for name in fns}
                two = ("triton", "torch")
                row = {
                    "key": f"{str(dtype)[6:]} {m}x{n}x{k}",
                    "M": m,
                    "device_us": dev,
                    "kernel_us": alone,
                    "host_us": host,
                    "inclusive_us": incl,
                    "triton_max_abs_error": error,
                    "choice_device": min(two, key=dev.__getitem__),
                    "choice_inclusive": min(two, key=incl.__getitem__),
                    "recorded": recorded[0] if recorded else None,
                }
                rows.append(row)
                print(
                    f"{row['key']:>24}  device us triton {dev['triton']:7.1f} torch {dev['torch']:7.1f} "
                    f"ops {dev['ops']:7.1f}  host us {host['triton']:5.1f} {host['torch']:5.1f} "
                    f"{host['ops']:5.1f}  triton/cublas {dev['torch'] / dev['triton']:.3f} "
                    f"(alone {alone['torch'] / alone['triton']:.3f}) "
                    f"ops/cublas {dev['torch'] / dev['ops']:.3f} (incl {incl['torch'] / incl['ops']:.3f}) "
                    f"recorded {row['recorded']}"
                    + (f" floor us {alone['floor']:.1f}" if "floor" in alone else ""),
                    flush=True,
                )
                if len(sys.argv) > 1:
                    result = {"rows": rows, **summary(rows), "stats": tuned_kernels.stats()}
                    with open(sys.argv[1], "w") as f:
                        json.dump(result, f, indent=1, default=str)
    print(json.dumps(summary(rows), indent=1))


if __name__ == "__main__":
    main()
