"""Device time alone vs launch-inclusive time (issue 16 item 2), for the two implementations `ops.matmul`
chooses between on the decode keys (M = 1, 16, 64 of the full matmul set), one process, the committed
full-matmul bundle serving the Triton kernel's configs and the recorded choice:
`TUNED_KERNELS_PATH=benchmarks/matmul-full-h100-triton3.6.0.pb.zst python benchmarks/choice_timing.py [OUT]`.

Per key: each implementation's device time (`triton.testing.do_bench`, what the tuner timed so far) and its
launch-inclusive time (the longer of that and the host's time to issue one call: what a program calling it
in a loop gets), the choice each timing makes, the choice the bundle recorded, and `ops.matmul` against
`torch.matmul`, both launch-inclusive."""

from __future__ import annotations

import json
import sys

import torch
from tuned_kernels.aot.kernels.builtin import LLM_NK

import tuned_kernels
from tuned_kernels.triton_edge.benchmarker import DeviceBenchmarker, LaunchInclusiveBenchmarker

DECODE_M = (1, 16, 64)


def main() -> None:
    tuned_kernels.enable()
    from tuned_kernels.aot.kernels.matmul import MATMUL_CHOICE, matmul, triton_matmul

    device = DeviceBenchmarker(warmup_ms=10, rep_ms=40)
    inclusive = LaunchInclusiveBenchmarker(device)
    rows = []
    for dtype in (torch.float16, torch.bfloat16):
        for n, k in LLM_NK:
            for m in DECODE_M:
                a = torch.randn(m, k, device="cuda", dtype=dtype) * k**-0.5
                b = torch.randn(k, n, device="cuda", dtype=dtype)
                impls = {
                    "triton": lambda a=a, b=b: triton_matmul(a, b),
                    "torch": lambda a=a, b=b: torch.matmul(a, b),
                }
                for fn in impls.values():
                    fn()  # served (or compiled) once
                op = lambda a=a, b=b: matmul(a, b)  # noqa: E731
                before = set(MATMUL_CHOICE.cache)
                op()  # decided once: the bundle's choice for this key (tuning key -> implementation)
                recorded = [MATMUL_CHOICE.cache[key] for key in set(MATMUL_CHOICE.cache) - before]
                dev = {name: device(fn) * 1e3 for name, fn in impls.items()}
                host = {name: inclusive.host_ms(fn) * 1e3 for name, fn in impls.items()}
                incl = {name: max(dev[name], host[name]) for name in impls}
                op_incl = inclusive(op) * 1e3
                row = {
                    "key": f"{str(dtype)[6:]} {m}x{n}x{k}",
                    "device_us": dev,
                    "host_us": host,
                    "inclusive_us": incl,
                    "choice_device": min(dev, key=dev.__getitem__),
                    "choice_inclusive": min(incl, key=incl.__getitem__),
                    "recorded": recorded[0] if recorded else None,
                    "ops_matmul_vs_torch_inclusive": incl["torch"] / op_incl,
                }
                rows.append(row)
                print(
                    f"{row['key']:>22}  device us triton {dev['triton']:6.1f} torch {dev['torch']:6.1f}  "
                    f"host us triton {host['triton']:5.1f} torch {host['torch']:5.1f}  "
                    f"choice {row['choice_device']:>6}/{row['choice_inclusive']:<6} recorded {row['recorded']}  "
                    f"ops.matmul {row['ops_matmul_vs_torch_inclusive']:.3f}x",
                    flush=True,
                )
    flips = sum(r["choice_device"] != r["choice_inclusive"] for r in rows)
    summary = {
        "rows": rows,
        "keys": len(rows),
        "choices_flipped_by_launch": flips,
        "stats": tuned_kernels.stats(),
    }
    print(f"{flips} of {len(rows)} choices differ once launches count")
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump(summary, f, indent=1, default=str)


if __name__ == "__main__":
    main()
