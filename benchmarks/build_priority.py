"""Does building ahead slow the program's own start-up? `import torch` timed alone, beside 4 C compiles at
normal priority, and beside 4 C compiles started from threads that lowered their priority as the warm-up's
builders do (`host_modules.BUILD_NICENESS`); one fresh process per row, on this machine's CPU (Linux):
`python benchmarks/build_priority.py [REPEATS]`. Each compile is `gcc -O3` of a generated 1500-function file
(about 5 s of CPU), heavier than a Triton launcher, so that it spans the whole import."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import os, subprocess, sys, threading, time
niceness, builds, source = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

def build(i):
    if niceness:
        me = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, me, os.getpriority(os.PRIO_PROCESS, me) + niceness)
    subprocess.check_call(["gcc", "-O3", "-c", source, "-o", f"{source}.{i}.o"])

threads = [threading.Thread(target=build, args=(i,), daemon=True) for i in range(builds)]
t0 = time.perf_counter()
for t in threads:
    t.start()
import torch
print(time.perf_counter() - t0)
"""


def main() -> None:
    from tuned_kernels.triton_edge.host_modules import BUILD_NICENESS

    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    folder = Path(tempfile.mkdtemp(prefix="build-priority-"))
    source = folder / "big.c"
    body = (
        f"int f{i}(int x) {{ int s = 0; for (int j = 0; j < x; j++) s += j * {i} % 7; return s; }}"
        for i in range(1500)
    )
    source.write_text("\n".join(body))
    rows = {
        "alone": (0, 0),
        "4 builds, normal priority": (0, 4),
        f"4 builds, niceness +{BUILD_NICENESS}": (BUILD_NICENESS, 4),
    }
    times: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(repeats):  # alternating
        for name, (niceness, builds) in rows.items():
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(niceness), str(builds), str(source)],
                capture_output=True, text=True, check=True, timeout=600
            )  # fmt: skip
            times[name].append(float(out.stdout.split()[-1]))
    alone = statistics.median(times["alone"])
    print(f"{os.cpu_count()} CPUs; import torch, median of {repeats}:")
    for name, samples in times.items():
        median = statistics.median(samples)
        print(
            f"  {name:<28} {median:5.2f} s  {median / alone:4.2f}x  ({', '.join(f'{t:.2f}' for t in samples)})"
        )


if __name__ == "__main__":
    main()
