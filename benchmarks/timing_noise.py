"""How much a config's timing moves when compile threads run beside it, and whether timing the repetitions
from one CUDA graph (`graph_times`, the tuner's timing) holds it still: the configs of a few short keys of the
speedup corpus timed by the tuner with `do_bench` (the least of its repetitions) and from a graph, each
twice quiet and once while threads of this process compile other kernels (as the next key's compiles do in
a tune). Prints, per timing and key, how far the configs' times moved between the two quiet
passes and between quiet and busy (median and largest ratio over the configs), and whether the winner
stayed.

    python benchmarks/timing_noise.py [--keys N] [--families F,...] [--ways do_bench,graph] [--threads N]
        [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from speedup_corpus import CORPUS

FAMILIES = ("softmax", "rms_norm")  # short kernels (--families attention adds a 50 µs one, 24 configs)


@contextmanager
def compiling_beside(threads: int) -> Iterator[list[int]]:
    """`threads` threads compiling a kernel with a new constexpr each time (every one a real compile) until
    the block ends; yields the count of compiles done."""
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def busy(x_ptr, n, SALT: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n)
        for i in tl.static_range(8):
            x = tl.sin(x) * SALT + tl.cos(x * i)
        tl.store(x_ptr + offs, x, mask=offs < n)

    x = torch.empty(1024, device="cuda")
    stop, done, salt = threading.Event(), [0], iter(range(1, 1 << 30))
    lock = threading.Lock()

    def work() -> None:
        while not stop.is_set():
            with lock:
                value = next(salt)
            busy.warmup(x, 1024, SALT=value, BLOCK=256, grid=(4,))
            done[0] += 1

    pool = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for t in pool:
        t.start()
    time.sleep(1.0)  # every thread compiling before the timing starts (not an outcome: a warm-up)
    try:
        yield done
    finally:
        stop.set()
        for t in pool:
            t.join(timeout=60)


def timings(tuner: Any, item: Any) -> dict[str, float]:
    """Every config's time for the item's key, as the tuner measures them."""
    entry = tuner.tune_case(item, tuner.key_of(item))
    return {t.config.describe(): t.time_ms for t in entry.timings}


def moved(a: dict[str, float], b: dict[str, float]) -> dict[str, Any]:
    """How the configs' times of pass b stand to pass a's: the median and largest ratio, and whether the
    fastest is the same."""
    ratios = [max(b[c], a[c]) / min(b[c], a[c]) for c in a if c in b]
    return {
        "median": round(statistics.median(ratios), 4),
        "largest": round(max(ratios), 4),
        "same_fastest": min(a, key=a.__getitem__) == min(b, key=b.__getitem__),
    }


def table(report: dict[str, Any]) -> list[str]:
    """A result file's rows: per timing and key, how far the configs' times moved (median and largest ratio)
    between the two quiet passes and between quiet and the pass with threads compiling beside, and the
    seconds the three passes took."""
    threads = report["environment"]["threads_beside"]
    lines = [
        "| timing | key | configs | quiet vs quiet: median / largest, same fastest | quiet vs a third pass with "
        f"{threads} threads compiling beside | seconds, three passes |",
        "|---|---|---|---|---|---|",
    ]
    for way, keys in report["timing_noise"].items():
        for key, row in keys.items():
            cells = [
                f"{row[p]['median']:.3f} / {row[p]['largest']:.3f}, {'yes' if row[p]['same_fastest'] else 'no'}"
                for p in ("quiet_vs_quiet", "quiet_vs_busy")
            ]
            lines.append(f"| {way} | {key} | {row['configs']} | {' | '.join(cells)} | {row['seconds']} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keys", type=int, default=1, help="keys per family")
    parser.add_argument(
        "--families", default=",".join(FAMILIES), help="comma-separated, of the speedup corpus"
    )
    parser.add_argument("--ways", default="do_bench,graph", help="the timings to compare")
    parser.add_argument("--threads", type=int, default=16, help="compile threads beside the timing")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--table-from", help="print the table of a result file, and nothing else")
    args = parser.parse_args()
    if args.table_from:
        print("\n".join(table(json.loads(Path(args.table_from).read_text()))))
        return

    import torch
    import triton
    from tuned_kernels.aot.tune_report import TuneOptions
    from tuned_kernels.aot.tuner import Tuner
    from tuned_kernels.aot.work import work_items
    from tuned_kernels.hardware import detect

    from tuned_kernels.triton_edge.benchmarker import DeviceBenchmarker

    families = [f for f in CORPUS if f.name in args.families.split(",")]
    items = [i for f in families for i in work_items([f], "full", (0, 1))[: args.keys]]
    ways = {
        "do_bench": DeviceBenchmarker(statistic="min"),
        "graph": DeviceBenchmarker(statistic="min", graphed=True),
    }
    ways = {way: ways[way] for way in args.ways.split(",")}  # in the order asked
    rows: dict[str, Any] = {}
    environment = {
        "environment": {
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "threads_beside": args.threads,
        }
    }  # fmt: skip
    warm = Tuner(detect(), "cuda", DeviceBenchmarker(warmup_ms=1, rep_ms=1), TuneOptions())
    for item in items:  # every config compiled before any way is timed: each way's seconds are its own
        timings(warm, item)
    for way, bench in ways.items():
        tuner = Tuner(detect(), "cuda", bench, TuneOptions())
        for item in items:
            label = f"{item.family.name} {item.case.id}"
            t0 = time.monotonic()
            first, second = timings(tuner, item), timings(tuner, item)
            with compiling_beside(args.threads) as compiles:
                busy = timings(tuner, item)
            rows.setdefault(way, {})[label] = {
                "quiet_vs_quiet": moved(first, second),
                "quiet_vs_busy": moved(first, busy),
                "compiles_beside": compiles[0],
                "configs": len(first),
                "seconds": round(time.monotonic() - t0, 1),
                "timed_by_do_bench_instead": bench.fallbacks,  # calls a graph could not capture, so far
            }
            print(way, label, json.dumps(rows[way][label]), flush=True)
            if args.json:  # after each key: a call cut short keeps what it measured
                Path(args.json).write_text(json.dumps({**environment, "timing_noise": rows}, indent=1))


if __name__ == "__main__":
    main()
