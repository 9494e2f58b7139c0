"""What Triton's build key costs a process: `triton.runtime.cache.triton_key()` timed in fresh processes,
Triton's own (it hashes Triton's compiler, backends, language and libtriton) against the key tuned-kernels
remembers (serving on, the record already written by an earlier process), alternating, medians.

    python benchmarks/build_key.py [--runs 7] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PROGRAM = (
    "import time, triton\n"
    "from triton.runtime.cache import triton_key\n"
    "t = time.perf_counter(); triton_key(); print(time.perf_counter() - t)\n"
)
TIMEOUT_S = 300


def timed(serving: bool, cache: str) -> float:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUNED_KERNELS")}
    env |= {"TUNED_KERNELS": "1" if serving else "0", "TUNED_KERNELS_CACHE_DIR": cache}
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=True,
    )
    return float(out.stdout.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    import triton

    with tempfile.TemporaryDirectory() as cache:
        first = timed(True, cache)  # computes the key and writes the record
        own, remembered = [], []
        for _ in range(args.runs):
            own.append(timed(False, cache))
            remembered.append(timed(True, cache))
    report = {
        "environment": {
            "triton": triton.__version__,
            "python": sys.version.split()[0],
            "cpus": os.cpu_count(),
        },
        "build_key": {
            "runs": args.runs,
            "first_serving_s": round(first, 4),
            "tritons_own_s": [round(t, 4) for t in own],
            "remembered_s": [round(t, 4) for t in remembered],
        },
    }
    own_median, remembered_median = statistics.median(own), statistics.median(remembered)
    print(
        f"triton_key() in a fresh process, medians of {args.runs}: Triton's own {own_median:.3f} s, "
        f"remembered {remembered_median:.4f} s = {remembered_median / own_median:.3f}x "
        f"(the first serving process, which writes the record: {first:.3f} s)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
