"""Offline tuning and cold start on a GPU, side by side in one run (stdlib + project only).

For the built-in fp16 matmul on four shapes, each row a fresh process with an empty TRITON_CACHE_DIR:
  triton      Triton's own @triton.autotune over the same 72 configs (no bundle)
  tune        `tuned-kernels tune --strategy exhaustive` (checks every config against a reference too)
  seeded      `tuned-kernels tune --strategy seeded` (heuristic seeds, then neighbours)
  bundle      the op with TUNED_KERNELS=1 and the exhaustive results as the only bundle
Prints a table last; writes JSON to the path given with --json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
APP = """
import json, sys, time, torch
t0 = time.perf_counter()
import os, tuned_kernels
if os.environ.get("TUNED_KERNELS"):
    tuned_kernels.enable()  # what tuned_kernels.pth does in a site-packages install; not processed from PYTHONPATH
sys.path.insert(0, sys.argv[1]); from matmul4 import SHAPES
from tuned_kernels import ops
out = {}
for m, n, k in SHAPES:
    a = torch.randn(m, k, device="cuda", dtype=torch.float16); b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = ops.matmul(a, b); torch.cuda.synchronize()
    err = ((c.float() - a.float() @ b.float()).abs().max() / (a.float() @ b.float()).abs().max()).item()
    assert err < 1e-2, err
out["seconds"] = time.perf_counter() - t0
s = tuned_kernels.stats() if os.environ.get("TUNED_KERNELS") else {}
out.update({k: s.get(k) for k in ("hits", "misses", "configs_benchmarked")})
print("RESULT " + json.dumps(out))
"""


def fresh_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TRITON_"))}
    env["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")
    env["TUNED_KERNELS_CACHE_DIR"] = tempfile.mkdtemp(prefix="tk-overlay-")
    return {**env, **extra}


def run(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"failed: {' '.join(argv)}")
    return wall, proc.stdout


def app(env: dict[str, str]) -> dict[str, float]:
    wall, out = run([sys.executable, "-c", APP, str(HERE)], env)
    result: dict[str, float] = json.loads(out.split("RESULT ", 1)[1])
    result["wall"] = wall
    return result


def tune(strategy: str, output: str) -> dict[str, float]:
    argv = [
        sys.executable,
        "-m",
        "tuned_kernels",
        "tune",
        "--corpus",
        str(HERE / "matmul4.py"),
        "--shapes",
        "bench",
        "--strategy",
        strategy,
        "-o",
        output,
        "--json",
    ]
    wall, out = run(argv, fresh_env())
    summary = json.loads(out)
    return {
        "wall": wall,
        "configs_benchmarked": summary["configs_benchmarked"],
        "tune_seconds": summary["seconds"],
    }


def best_times(path: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "tuned_kernels", "inspect", path, "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=fresh_env(),
    ).stdout
    return {str(e["key"][:3]): e["best_time_ms"] for e in json.loads(out)["entries"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="tk-bench-")
    exhaustive, seeded = f"{work}/exhaustive.pb", f"{work}/seeded.pb"
    rows = {
        "triton": app(fresh_env()),
        "tune": tune("exhaustive", exhaustive),
        "seeded": tune("seeded", seeded),
    }
    rows["bundle"] = app(fresh_env(TUNED_KERNELS="1", TUNED_KERNELS_PATH=exhaustive))
    ex, se = best_times(exhaustive), best_times(seeded)
    quality = {k: ex[k] / se[k] for k in ex if k in se}
    report = {"rows": rows, "exhaustive_best_ms": ex, "seeded_best_ms": se, "seeded_quality": quality}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    print("\n| run | wall s | configs benchmarked | notes |\n|---|---|---|---|")
    print(f"| Triton autotune, no caches | {rows['triton']['wall']:.1f} | 4 x 72 | time to first results |")
    print(
        f"| tuned-kernels tune exhaustive | {rows['tune']['wall']:.1f} | {rows['tune']['configs_benchmarked']} "
        f"| every config checked against a reference |"
    )
    print(
        f"| tuned-kernels tune seeded | {rows['seeded']['wall']:.1f} | {rows['seeded']['configs_benchmarked']} | "
        f"best vs exhaustive: {', '.join(f'{q:.3f}' for q in quality.values())} |"
    )
    print(
        f"| bundle only (TUNED_KERNELS=1) | {rows['bundle']['wall']:.1f} | {rows['bundle']['configs_benchmarked']} "
        f"| hits {rows['bundle']['hits']}, misses {rows['bundle']['misses']}; "
        f"{rows['triton']['wall'] / rows['bundle']['wall']:.1f}x faster than no caches |"
    )


if __name__ == "__main__":
    main()
