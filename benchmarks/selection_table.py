"""Kernel selection in a results file: per matmul key, the Triton kernel's time vs torch.matmul's, as the
tuner measured them (same process, same benchmarker), and which one `ops.matmul` will run.

    python benchmarks/selection_table.py RESULTS
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict

from tuned_kernels.results import read_results


def main(path: str) -> None:
    rows = []
    for entry in read_results(path).entries:
        times = {dict(t.config.kwargs).get("IMPL"): t.time_ms for t in entry.timings}
        if "triton" in times and "torch" in times:
            m, n, k, dtype = *entry.key[:3], str(entry.key[3]).removeprefix("torch.")
            rows.append((dtype, n, k, m, times["triton"], times["torch"]))
    if not rows:
        raise SystemExit(f"{path}: no kernel-selection entries with both implementations timed")
    print("| dtype | N x K | M | Triton ms | torch.matmul ms | Triton vs cuBLAS | chosen |")
    print("|---|---|---|---|---|---|---|")
    by_dtype = defaultdict(list)
    for dtype, n, k, m, triton, torch in sorted(rows):
        by_dtype[dtype].append(torch / triton)
        chosen = "triton" if triton < torch else "torch"
        print(f"| {dtype} | {n} x {k} | {m} | {triton:.4g} | {torch:.4g} | {torch / triton:.2f} | {chosen} |")
    for dtype, ratios in sorted(by_dtype.items()):
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        wins = sum(r > 1 for r in ratios)
        print(
            f"\n{dtype}: Triton vs cuBLAS geomean {geo:.2f}, Triton chosen for {wins} of {len(ratios)} keys"
        )


if __name__ == "__main__":
    main(sys.argv[1])
