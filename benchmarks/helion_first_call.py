"""Helion kernels, first call: Helion's own autotuning vs the bundle (GPU). Each mode is a fresh process of
benchmarks/helion_program.py (three Helion kernels at two shapes each) with empty caches but the one named:

  helion       Helion as it is: every kernel and shape searched (Helion's local cache in WORK/helion-cache)
  capture      `tuned-kernels capture` of the program with Helion's local cache of the first mode: records
               the configs Helion found there, and the kernels compiled with them, into WORK/helion.pb.zst
  bundle       TUNED_KERNELS=1 with that bundle alone (no Helion, Triton or Inductor cache)
  helion-warm  Helion as it is, its local cache of the first mode warm (Triton's cache empty)

    python benchmarks/helion_first_call.py --work WORK [--modes helion,capture,bundle,helion-warm] [--json F]

Modes may be split over calls sharing WORK (a search may take minutes). Prints time to first results, with
the ratio to Helion's own, searches and configs timed, kernels compiled, and each kernel's steady-state time
and whether its config is the one Helion found. HELION_AUTOTUNE_EFFORT (default here: quick) and
HELION_AUTOTUNE_BENCHMARK_SUBPROCESS are passed on as set.
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
from typing import Any

HERE = Path(__file__).resolve().parent
PROGRAM = HERE / "helion_program.py"
MODES = ("helion", "capture", "bundle", "helion-warm")


def run_mode(mode: str, work: Path, timeout: float) -> dict[str, Any]:
    fresh = Path(tempfile.mkdtemp(prefix=f"{mode}-", dir=work))
    env = {
        **os.environ,
        "HELION_AUTOTUNE_EFFORT": os.environ.get("HELION_AUTOTUNE_EFFORT", "quick"),
        "TRITON_CACHE_DIR": str(fresh / "triton"),
        "TORCHINDUCTOR_CACHE_DIR": str(fresh / "inductor"),
        "HELION_CACHE_DIR": str(work / "helion-cache" if mode != "bundle" else fresh / "helion"),
        "TUNED_KERNELS_CACHE_DIR": str(fresh / "overlay"),
        "TUNED_KERNELS_PATH": str(work / "helion.pb.zst") if mode == "bundle" else "",
    }
    env.pop("TUNED_KERNELS", None)
    command = [sys.executable, str(PROGRAM)]
    if mode == "capture":
        command = [
            sys.executable,
            "-m",
            "tuned_kernels",
            "capture",
            "-o",
            str(work / "helion.pb.zst"),
            "--",
            *command,
        ]
    if mode == "bundle":
        env["TUNED_KERNELS"] = "1"
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout)
    wall = time.perf_counter() - start
    lines = [line for line in out.stdout.splitlines() if line.startswith("HELION ")]
    if out.returncode != 0 or not lines:
        raise RuntimeError(f"{mode}: exit {out.returncode}\n{out.stderr[-3000:]}")
    return {**json.loads(lines[-1].removeprefix("HELION ")), "process_s": round(wall, 2)}


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    base = results.get("helion")
    rows = [f"{'mode':<12} {'first results s':>15} {'vs helion':>9} {'process s':>9} {'searches':>8} "
            f"{'configs timed':>13} {'compiled':>8}"]  # fmt: skip
    for mode, r in results.items():
        ratio = f"{base['first_results_s'] / r['first_results_s']:.1f}x" if base else "-"
        rows.append(f"{mode:<12} {r['first_results_s']:>15.2f} {ratio:>9} {r['process_s']:>9.1f} "
                    f"{r['searches']:>8} {r['configs_timed']:>13} {r['compiled']:>8}")  # fmt: skip
    if base:
        rows.append("steady state, ms (median of do_bench), and whether the config is Helion's own:")
        for name, kernel in base["kernels"].items():
            cells = [f"helion {kernel['ms']:.4f}"]
            for mode, r in results.items():
                if mode != "helion" and name in r["kernels"]:
                    same = (
                        "same config" if r["kernels"][name]["config"] == kernel["config"] else "OTHER config"
                    )
                    cells.append(f"{mode} {r['kernels'][name]['ms']:.4f} ({same})")
            rows.append(f"  {name:<22} " + ", ".join(cells))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--json", type=Path)
    parser.add_argument("--timeout", type=float, default=540)
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    saved = args.work / "helion-results.json"
    results: dict[str, dict[str, Any]] = json.loads(saved.read_text()) if saved.exists() else {}
    for mode in args.modes.split(","):
        results[mode] = run_mode(mode, args.work, args.timeout)
        saved.write_text(json.dumps(results, indent=1))
        print(f"{mode}: {results[mode]['first_results_s']} s to first results", flush=True)
    results = {m: results[m] for m in MODES if m in results}
    print("\n".join(table(results)))
    if args.json:
        import torch

        device = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
        args.json.write_text(json.dumps({"device": device, "modes": results}, indent=1))


if __name__ == "__main__":
    main()
