"""The first call of a key the bundle never saw, served a predicted config whose compiled kernel the bundle
holds, against a hit's first call (GPU).

The tutorial-style matmul (benchmarks/miss.py) is tuned at M = 512 and 2048 (N = K = 4096) with every
config's compiled kernel kept (`tune --artifacts all`). Then, each in a fresh process with an empty Triton
cache and overlay, `TUNED_KERNELS=1` and only that bundle: M = 2048 (a hit) and M = 1536 (never tuned: its
config is predicted; M is a multiple of 16 as at the tuned keys, so Triton's specialization, and with it
the compiled kernel, is the same), and M = 1536 with no bundle (Triton's own autotuning). Each: the first
launch to its result, kernels compiled, configs timed.
`python benchmarks/predict_first_call.py [--repeats N] [--json OUT]`; child: `... run M`.
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
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SMALL = os.environ.get("PREDICT_FIRST_SMALL") == "1"  # a dry run on a CPU (Triton's interpreter): tiny shapes
NK = 64 if SMALL else 4096
TRAINING_M = (32, 128) if SMALL else (512, 2048)
CORPUS = f"""
import dataclasses, sys
sys.path.insert(0, {str(HERE)!r})
import prediction_corpus
from tuned_kernels.aot.corpus import Case
CASES = [Case.of(M=m, N={NK}, K={NK}, dtype="float16") for m in {TRAINING_M!r}]
CORPUS = [dataclasses.replace(prediction_corpus._tutorial(), shapes={{"full": CASES}})]
"""
HIT_M, NEW_M = (128, 96) if SMALL else (2048, 1536)
CASES = (("hit", HIT_M, True), ("predicted", NEW_M, True), ("Triton's own tuning", NEW_M, False))


def child(m: int) -> dict[str, Any]:
    import torch

    sys.path.insert(0, str(HERE))
    from miss import tutorial_matmul

    from tuned_kernels.triton_edge.counters import counting_triton

    counts = counting_triton()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    a = torch.randn(m, NK, device=device).half() * NK**-0.5
    b = torch.randn(NK, NK, device=device).half()
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = tutorial_matmul(a, b)
    if device == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    torch.testing.assert_close(out.float(), (a.float() @ b.float()), atol=5e-2, rtol=5e-2)
    import tuned_kernels

    s = tuned_kernels.stats() if os.environ.get("TUNED_KERNELS") == "1" else {}
    return {"seconds": seconds, "compiled": int(counts["compiled"]), "timed": int(counts["autotune_benchmarks"]),
            "hits": s.get("hits"), "predicted": s.get("predicted"), "misses": s.get("misses")}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="predict-first-"))
    (work / "corpus.py").write_text(CORPUS)
    bundle = work / "tutorial.pb.zst"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TRITON_CACHE"))}
    tune = [
        sys.executable,
        "-m",
        "tuned_kernels",
        "tune",
        "--corpus",
        str(work / "corpus.py"),
        "--shapes",
        "full",
    ]
    t0 = time.perf_counter()
    subprocess.run(
        [*tune, "--artifacts", "all", "-o", str(bundle)], env=clean, check=True, cwd=work, timeout=600
    )
    report: dict[str, Any] = {"tune_s": time.perf_counter() - t0, "training_m": TRAINING_M, "cases": {}}
    for label, m, served in CASES:
        runs = []
        for i in range(args.repeats):
            env = {**clean, "TRITON_CACHE_DIR": str(work / f"triton-{label[:4]}-{i}"),
                   "TUNED_KERNELS_CACHE_DIR": str(work / f"overlay-{label[:4]}-{i}")}  # fmt: skip
            if served:
                env.update(TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
            out = subprocess.run([sys.executable, __file__, "run", str(m)], env=env, capture_output=True,
                                 text=True, timeout=600)  # fmt: skip
            if out.returncode != 0:
                raise SystemExit(f"{label} (M={m}) failed:\n{out.stderr[-3000:]}")
            runs.append(json.loads(out.stdout.splitlines()[-1]))
        report["cases"][label] = {
            "m": m,
            "runs": runs,
            "median_s": statistics.median(r["seconds"] for r in runs),
        }
        print(f"{label} (M={m}): {report['cases'][label]['median_s']:.3f} s, runs {runs}", flush=True)
    hit, predicted = (report["cases"][k]["median_s"] for k in ("hit", "predicted"))
    print(f"predicted / hit first call: {predicted / hit:.2f}x (goal <= 1.2x)")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["run"]:
        print(json.dumps(child(int(sys.argv[2]))))
    else:
        main()
