"""What every benchmark step shares: `Bench` (the working folder, the report and its JSON, clean
environments with fresh caches, child processes with a time limit) and the machine the numbers come from."""

from __future__ import annotations

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
WORKLOAD = str(HERE / "workload.py")
COMMITTED_MATMUL = HERE / "matmul-full-h100-triton3.6.0.pb.zst"


class Bench:
    def __init__(self, work: Path, json_path: str | None) -> None:
        self.work = work
        self.json_path = json_path
        self.report: dict[str, Any] = {"environment": environment()}
        self.tune_cache = str(work / "tune-cache")  # tune's compiled kernels, reused by the quality step
        self.matmul_bundle = work / "matmul-full.pb.zst"  # matmul-tune's, served by choices

    def save(self) -> None:
        if self.json_path:
            Path(self.json_path).write_text(json.dumps(self.report, indent=2, default=str))

    def env(self, triton_cache: str | None = None, **extra: str) -> dict[str, str]:
        """A clean environment: nothing of ours or Triton's inherited; fresh cache directories."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TRITON_"))}
        env["TRITON_CACHE_DIR"] = triton_cache or tempfile.mkdtemp(prefix="triton-", dir=self.work)
        env["TUNED_KERNELS_CACHE_DIR"] = tempfile.mkdtemp(prefix="overlay-", dir=self.work)
        return {**env, **extra}

    def run(self, argv: list[str], env: dict[str, str]) -> tuple[float, str]:
        t0 = time.perf_counter()
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=self.work, timeout=600)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
            raise SystemExit(f"failed ({proc.returncode}): {' '.join(argv)}")
        return wall, proc.stdout

    def child(self, mode: str, args: list[str], env: dict[str, str]) -> dict[str, Any]:
        spawned_at = time.time()
        wall, out = self.run([sys.executable, WORKLOAD, mode, *args], env)
        ended_at = time.time()
        result: dict[str, Any] = json.loads(out.split("RESULT ", 1)[1])
        result["wall_s"] = wall
        if "workload_at" in result:  # phases: interpreter start, imports and set-up / workload / the rest
            result["phases_s"] = {
                "start": result["started_at"] - spawned_at,
                "imports": result["workload_at"] - result["started_at"],
                "workload": result["workload_seconds"],
                "checks_and_exit": ended_at - result["workload_at"] - result["workload_seconds"],
            }
        return result

    def tool(self, args: list[str], env: dict[str, str]) -> tuple[float, str]:
        return self.run([sys.executable, "-m", "tuned_kernels", *args], env)


def environment() -> dict[str, Any]:
    info: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "python": sys.version.split()[0]}
    try:
        import torch
        import triton

        info.update(torch=torch.__version__, triton=triton.__version__)
        if torch.cuda.is_available():
            info["device"] = torch.cuda.get_device_name(0)
            info["gpus"] = torch.cuda.device_count()
            smi = subprocess.run(
                ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=600,
            )
            info["driver"] = smi.stdout.strip().splitlines()[0] if smi.returncode == 0 else "?"
    except Exception as exc:  # the table still prints what was measured
        info["error"] = repr(exc)
    return info


def geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0]
    return float(statistics.geometric_mean(values)) if values else float("nan")
