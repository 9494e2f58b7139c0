"""Where a missed key's time goes (GPU): one `benchmarks/miss.py` child run with Triton's compile stages, its
launcher builds, kernel loads and timings traced per thread.

`python benchmarks/miss_trace.py KERNEL triton|ours` (in a fresh process with an empty TRITON_CACHE_DIR, and
for `ours` TUNED_KERNELS=1 with no bundle) prints miss.py's result with, per traced step, how often it ran,
its summed seconds and its span (first start to last end, in seconds from the workload's start), as a
table and then as one JSON line.
"""

from __future__ import annotations

import json
import sys
import time

from tuned_kernels.triton_edge.counters import Event, traced, tracing_triton

EVENTS: list[Event] = []


def install() -> None:
    """Triton's steps (counters.tracing_triton) and tuned-kernels' own: the registry's load, decisions and
    records, a miss's key and measuring."""
    from tuned_kernels.registry import runtime

    from tuned_kernels.triton_edge import autotuner as edge
    from tuned_kernels.triton_edge import measuring

    tracing_triton(EVENTS)
    for method in ("load", "decide", "record"):
        traced(runtime.Registry, method, f"Registry.{method}", EVENTS)
    for function in ("kernel_identity", "tuning_key", "kernel_space", "_measured"):
        traced(edge, function, function, EVENTS)
    traced(measuring, "compile_all", "compile_all", EVENTS)


def summary(origin: float) -> dict[str, dict[str, float]]:
    rows: dict[str, dict[str, float]] = {}
    for label, _, start, end in EVENTS:
        row = rows.setdefault(label, {"n": 0, "sum": 0.0, "first": start - origin, "last": end - origin})
        row["n"] += 1
        row["sum"] = round(row["sum"] + end - start, 3)
        row["first"] = round(min(row["first"], start - origin), 3)
        row["last"] = round(max(row["last"], end - origin), 3)
    return rows


if __name__ == "__main__":
    install()
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).parent))
    import miss

    origin = time.perf_counter()
    result = miss.run(sys.argv[1], sys.argv[2])
    threads = sorted({t for _, t, _, _ in EVENTS})
    builds = [
        (t, round(a - origin, 3), round(b - origin, 3)) for label, t, a, b in EVENTS if label == "gcc build"
    ]
    print(json.dumps({**result, "trace": summary(origin), "threads": threads, "builds": builds}))
