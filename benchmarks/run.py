"""Every performance claim in one command (stdlib + project only): `python benchmarks/run.py --json OUT`.

Steps (each a fresh process where start-up is measured; ratios from one run):
  tune     `tuned-kernels tune` exhaustive and seeded on the workload (benchmarks/workload.py)
  cold     time to first results of the workload: no caches / Triton's warm caches / our
           bundle only (wheel installed, empty TRITON_CACHE_DIR), with compilations and configs benchmarked
           counted through Triton's own hooks
  hot      per-launch time of a tiny autotuned kernel, tuned-kernels enabled vs not
  quality  every config re-measured now in one process: shipped winner and seeded winner vs the best
           now; matmul vs torch.matmul (cuBLAS), fp16 and bf16
  load     a synthetic 100k-entry bundle: load + first look-up (also runs without a GPU)
  size     bytes per entry with and without compiled kernels
  scaling  the full matmul keys tuned for --scaling-budget seconds on one GPU, then on every visible GPU:
           keys per second, with the merged report's figures (needs 2 GPUs; `--steps scaling`)
  dask     the same keys and budget on every visible GPU, tune's own workers vs `--dask local` (a Dask
           worker per GPU): keys per second of each and Dask's cost per key (`--steps dask`)
  programs real programs (ours, fla-core's norm, liger-kernel's DyT and SwiGLU): whole process with no
           caches / Triton's warm caches / only the bundle `tuned-kernels capture` made, with and without
           the warm-up (TUNED_KERNELS_WARMUP=0), fresh processes, alternating, with kernels compiled counted
           (`--steps programs`, `--programs` to run some)
  matmul-tune  the full-matmul bundle for `choices`: the committed one's split-K entries (M <= 64) kept, the
           kernel triton_matmul runs for M > 64 on this GPU (the copy engine's on Hopper, else the tile
           kernel) and ops.matmul's choice (all 84 keys, launch-inclusive) tuned into
           WORK/matmul-full.pb.zst (`--steps matmul-tune`, then commit it as the committed bundle)
  choice-tune  the same with every kernel entry of the committed bundle kept: only ops.matmul's 84
           choices tuned again (after a change to the Triton matmul's launch cost) (`--steps choice-tune`)
  choices  the Triton matmul and ops.matmul vs torch.matmul (cuBLAS) on all 84 full-matmul keys, device
           time, kernel alone and launch-inclusive, on decode keys a read of B beside them (the memory
           floor, benchmarks/read_floor.py), the choice each timing makes and the one recorded; WORK's
           matmul-full.pb.zst serving if a matmul-tune made one, else the committed bundle (`--steps
           choices`; benchmarks/matmul_keys.py)
  inductor torch.compile on the GPU, a 2-block MLP and 4 Llama-style decoder blocks (fp16, 512 tokens):
           first call with max-autotune and no caches / max-autotune, Inductor's and Triton's warm caches /
           max-autotune with only the bundle `tuned-kernels capture` made (empty caches) / default mode, no
           caches; fresh processes, alternating; GEMM autotunings counted, steady-state ms per step; and the
           MLP with one more layer shape served from the same bundle (`--steps inductor`)
  graphs   torch.compile's first call served from a bundle with its compiled graphs, vs default mode with
           no caches and a warm machine, per model and mode (`--steps graphs`, `--graph-cases`;
           benchmarks/inductor_warm.py)
The full JSON goes to --json after every step; a short table is printed last.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import inductor_warm  # a step's own module: beside this script, on its path

HERE = Path(__file__).resolve().parent
WORKLOAD = str(HERE / "workload.py")
COMMITTED_MATMUL = HERE / "matmul-full-h100-triton3.6.0.pb.zst"
ALL_STEPS = ("tune", "cold", "hot", "quality", "load", "size")
MATMUL_TUNES = {  # step: the families of the full-matmul bundle tuned again, the other entries kept
    "matmul-tune": ("matmul", "matmul_tma", "matmul_impl"),
    "choice-tune": ("matmul_impl",),
}


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

    # -- steps ----------------------------------------------------------------------------------------------

    def tune(self, only_exhaustive: bool = False) -> None:
        out: dict[str, Any] = {}
        selection = (
            "--corpus",
            f"{WORKLOAD}:WITH_SELECTION",
            "--kernels",
            "matmul",
            "--kernels",
            "matmul_skinny",
            "--kernels",
            "matmul_tma",
            "--kernels",
            "matmul_impl",
        )
        runs = (
            ("exhaustive", "cold", "exhaustive", ("--corpus", WORKLOAD)),
            ("seeded", "cold", "seeded", ("--corpus", WORKLOAD)),
            # kernel selection for ops.matmul: resumes from the exhaustive file, so only the choice is timed
            ("selection", "cold", "exhaustive", (*selection, "--resume")),
            ("bf16", "bf16", "exhaustive", selection),
        )
        for name, shapes, strategy, extra in runs[:1] if only_exhaustive else runs:
            output = self.work / f"{name}.pb.zst"
            if name == "selection":
                shutil.copyfile(self.work / "exhaustive.pb.zst", output)
            # seeded starts from an empty compile cache too, so its wall time compares with exhaustive's
            cache = self.tune_cache if name != "seeded" else None
            wall, text = self.tool(
                [*("tune", "--shapes", shapes, "--strategy", strategy, "-o", str(output), "--json", *extra)],
                self.env(cache),
            )
            out[name] = {"wall_s": wall, **json.loads(text)}
        self.report["tune"] = out

    def programs(self, repeats: int, names: list[str]) -> None:
        out: dict[str, Any] = self.report.get("programs", {})
        for name in names:
            argv = PROGRAMS[name]
            app = [sys.executable, str(HERE.parent / argv[0]), *argv[1:]]
            warm = tempfile.mkdtemp(prefix="triton-warm-", dir=self.work)
            none = _compiled_and_wall(self.run(app, self.env(warm, TRITON_CACHE_AUTOTUNING="1")))
            bundle = self.work / f"{name}.pb.zst"
            self.tool(["capture", "-o", str(bundle), "--", *app], self.env())
            rows: dict[str, list[dict[str, float]]] = {"triton_warm": [], "bundle_only": [], "no_warmup": []}
            for _ in range(repeats):  # alternating, so drifts of the machine fall on all
                warm_env = self.env(warm, TRITON_CACHE_AUTOTUNING="1")
                rows["triton_warm"].append(_compiled_and_wall(self.run(app, warm_env)))
                served = self.env(None, TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
                rows["bundle_only"].append(_compiled_and_wall(self.run(app, served)))
                served = self.env(
                    None, TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle), TUNED_KERNELS_WARMUP="0"
                )
                rows["no_warmup"].append(_compiled_and_wall(self.run(app, served)))
            out[name] = {"no_caches": none, **rows}
        self.report["programs"] = out

    def inductor(self, repeats: int, models: list[str]) -> None:
        app = [sys.executable, str(HERE.parent / "tests/corpora/inductor_model.py")]

        def fresh(**extra: str) -> dict[str, str]:
            return self.env(
                TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(prefix="inductor-", dir=self.work), **extra
            )

        def model_run(model: str, mode: str, env: dict[str, str]) -> dict[str, Any]:
            wall, out = self.run([*app, model, mode], env)
            return {**json.loads(out.splitlines()[-1]), "wall_s": round(wall, 3)}

        out: dict[str, Any] = self.report.get("inductor", {})
        for model in models:
            bundle = self.work / f"inductor-{model}.pb.zst"
            capture_s, _ = self.tool(
                ["capture", "-o", str(bundle), "--", *app, model, "max-autotune"], fresh()
            )
            warm = fresh()  # its caches, made by the cold run, serve the warm runs
            cold = model_run(model, "max-autotune", warm)
            rows: dict[str, Any] = {"capture_s": round(capture_s, 3), "no_caches": cold}
            for _ in range(repeats):  # alternating, so drifts of the machine fall on all rows alike
                served = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
                for row, (mode, env) in {
                    "warm_caches": ("max-autotune", warm),
                    "bundle_only": ("max-autotune", served),
                    "default_no_caches": ("default", fresh()),
                }.items():
                    rows.setdefault(row, []).append(model_run(model, mode, env))
            if model == "mlp":
                served = fresh(TUNED_KERNELS="1", TUNED_KERNELS_PATH=str(bundle))
                rows["new_shape_bundle"] = model_run("mlp+new", "max-autotune", served)
            out[model] = rows
            self.report["inductor"] = out
            self.save()

    def cold(self, repeats: int, with_no_caches: bool = True) -> None:
        if not (self.work / "exhaustive.pb.zst").exists():
            raise SystemExit(f"cold: no {self.work}/exhaustive.pb.zst; run the tune step first (same --work)")
        _, text = self.tool(
            ["build-wheel", str(self.work / "exhaustive.pb.zst"), "-o", str(self.work / "dist")], self.env()
        )
        site = self.work / "bundle-site"
        wheels = [str(p) for p in (self.work / "dist").glob("*.whl")]
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), *wheels],
            check=True,
            timeout=600,
        )
        warm = str(self.work / "triton-warm")
        if with_no_caches:
            no_caches = self.child("first-result", [], self.env(warm, TRITON_CACHE_AUTOTUNING="1"))
        else:  # a shorter diagnostic run: Triton's warm caches made by one autotuning pass, not timed
            self.child("first-result", [], self.env(warm, TRITON_CACHE_AUTOTUNING="1"))
            no_caches = None
        path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH", "")) if p)
        warm_runs, bundle_runs, no_warmup_runs = [], [], []
        for _ in range(repeats):  # alternating, so drifts of the machine fall on all three
            warm_runs.append(self.child("first-result", [], self.env(warm, TRITON_CACHE_AUTOTUNING="1")))
            bundle_runs.append(
                self.child("first-result", [], self.env(None, TUNED_KERNELS="1", PYTHONPATH=path))
            )
            no_warmup = self.env(None, TUNED_KERNELS="1", PYTHONPATH=path, TUNED_KERNELS_WARMUP="0")
            no_warmup_runs.append(self.child("first-result", [], no_warmup))
        self.report["cold"] = {
            "wheel": text.strip(),
            "no_caches": no_caches,
            "triton_warm": warm_runs,
            "bundle_only": bundle_runs,
            "no_warmup": no_warmup_runs,
        }

    def hot(self, repeats: int) -> None:
        runs: dict[str, list[float]] = {"off": [], "on": []}
        for _ in range(repeats + 2):  # alternating, so drift affects both alike
            runs["off"].append(self.child("hot-path", [], self.env())["us_per_launch"])
            runs["on"].append(self.child("hot-path", [], self.env(TUNED_KERNELS="1"))["us_per_launch"])
        interleaved = [self.child("hot-path-interleaved", [], self.env()) for _ in range(repeats)]
        self.report["hot"] = {**runs, "interleaved": interleaved}

    def quality(self) -> None:
        names = ("exhaustive", "seeded", "bf16", "selection")
        paths = [str(self.work / f"{n}.pb.zst") for n in names if (self.work / f"{n}.pb.zst").exists()]
        self.report["quality"] = self.child("quality", paths, self.env(self.tune_cache))

    def matmul_tune(self, families: tuple[str, ...]) -> None:
        """The committed bundle's entries of every other kernel kept, `families` tuned again (resuming an
        earlier call's file)."""
        from tuned_kernels.aot.kernels.builtin import CORPUS

        from tuned_kernels.results import read_results, write_results
        from tuned_kernels.triton_edge.keys import kernel_identity

        committed = read_results(COMMITTED_MATMUL)
        again = {kernel_identity(f.kernel) for f in CORPUS if f.name in families}
        kept = tuple(e for e in committed.entries if e.kernel not in again)
        if not self.matmul_bundle.exists():  # else an earlier call's, resumed
            write_results(self.matmul_bundle, dataclasses.replace(committed, entries=kept))
        kernels = [arg for name in families for arg in ("--kernels", name)]
        argv = ["tune", "--shapes", "full", *kernels, "--resume", "-o", str(self.matmul_bundle), "--json"]
        wall, text = self.tool(argv, self.env())
        self.report["matmul_tune"] = {"wall_s": wall, "kept_entries": len(kept), **json.loads(text)}

    def choices(self) -> None:
        out = self.work / "matmul-keys.json"
        bundle = self.matmul_bundle if self.matmul_bundle.exists() else COMMITTED_MATMUL
        self.run(
            [sys.executable, str(HERE / "matmul_keys.py"), str(out)], self.env(TUNED_KERNELS_PATH=str(bundle))
        )
        self.report["choices"] = {"bundle": bundle.name, **json.loads(out.read_text())}

    def load(self, entries: int, repeats: int) -> None:
        bundle = self.work / "synthetic.pb.zst"
        synthetic_bundle(bundle, entries)
        runs = [
            self.child("bundle-load", [str(entries)], self.env(TUNED_KERNELS_PATH=str(bundle)))
            for _ in range(repeats)
        ]
        self.report["load"] = {"entries": entries, "bytes": bundle.stat().st_size, "runs": runs}

    def size(self) -> None:
        from tuned_kernels.results import read_results, write_results

        results = read_results(self.work / "exhaustive.pb.zst")
        bare = results.with_entries(tuple(dataclasses.replace(e, artifacts=()) for e in results.entries))
        write_results(self.work / "bare.pb.zst", bare)
        n = len(results.entries)
        self.report["size"] = {
            "entries": n,
            "with_artifacts_bytes": (self.work / "exhaustive.pb.zst").stat().st_size,
            "without_artifacts_bytes": (self.work / "bare.pb.zst").stat().st_size,
        }

    def scaling(self, budget_s: float) -> None:
        """The full matmul keys, tuned for `budget_s` on one GPU, then on every GPU: keys per second, and the
        merged report's figures (every participant's)."""
        import torch

        gpus = torch.cuda.device_count()
        rows = {}
        for label, visible in (("1 GPU", "0"), (f"{gpus} GPUs", ",".join(map(str, range(gpus))))):
            argv = ["tune", "--shapes", "full", "--kernels", "matmul", "--kernels", "matmul_skinny"]
            argv += ["--kernels", "matmul_tma"]
            argv += ["--time-budget", str(budget_s)]
            output = str(self.work / f"s{len(rows)}.pb")
            wall, text = self.tool([*argv, "-o", output, "--json"], self.env(CUDA_VISIBLE_DEVICES=visible))
            rows[label] = {"wall_s": wall, "budget_s": budget_s, **json.loads(text)}
        self.report["scaling"] = rows

    def dask(self, budget_s: float) -> None:
        """The full matmul keys for `budget_s` on every visible GPU, by tune's own workers and by a local
        Dask cluster: keys per second of each."""
        rows = {}
        for label, extra in (("tune's workers", []), ("Dask", ["--dask", "local"])):
            argv = ["tune", "--shapes", "full", "--kernels", "matmul", "--kernels", "matmul_skinny"]
            argv += ["--kernels", "matmul_tma", "--time-budget", str(budget_s), *extra]
            output = str(self.work / f"d{len(rows)}.pb")
            wall, text = self.tool([*argv, "-o", output, "--json"], self.env())
            rows[label] = {"wall_s": wall, "budget_s": budget_s, **json.loads(text)}
        self.report["dask"] = rows


def synthetic_bundle(path: Path, entries: int) -> None:
    """A results file of `entries` keys for one kernel, for this machine's target and compiler."""
    sys.path.insert(0, str(HERE))
    from tuned_kernels.hardware import compiler_fingerprint, detect
    from workload import SYNTHETIC, synthetic_key

    from tuned_kernels import model
    from tuned_kernels.results import write_results

    target = detect()
    header = model.Header(
        target, compiler_fingerprint(target), model.Producer.TUNE, "bench", "2026-01-01T00:00:00Z"
    )
    kernel = model.KernelIdentity(*SYNTHETIC)
    configs = [
        model.Config.of({"BLOCK_M": 2**b, "BLOCK_N": 64}, num_warps=4 * (b % 2 + 1)) for b in range(4, 8)
    ]
    rows = tuple(
        model.Entry(
            kernel, synthetic_key(i), configs[i % 4], (model.Timing(configs[i % 4], 0.01 + i * 1e-6),)
        )
        for i in range(entries)
    )
    write_results(path, model.Results(header, rows))


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


# -- the table ------------------------------------------------------------------------------------------------


def geomean(values: list[float]) -> float:
    values = [v for v in values if v > 0]
    return float(statistics.geometric_mean(values)) if values else float("nan")


PROGRAMS = {  # as tests/test_gpu.py runs them
    "ours": ["tests/corpora/captured_app.py"],
    "fla-core": ["tests/corpora/fla_norm_app.py", "cuda"],
    "liger-kernel": ["tests/corpora/liger_app.py"],
}


def _compiled_and_wall(run: tuple[float, str]) -> dict[str, float]:
    wall, out = run
    return {"wall_s": wall, "compiled": float(out.split("COMPILED ", 1)[1].split()[0])}


def table(r: dict[str, Any]) -> str:
    lines = ["| step | what | measured | goal | met |", "|---|---|---|---|---|"]

    def row(pid: str, what: str, measured: str, goal: str, met: bool | None) -> None:
        lines.append(
            f"| {pid} | {what} | {measured} | {goal} | {'-' if met is None else 'yes' if met else 'NO'} |"
        )

    inductor_warm.verdicts(r, row)

    if "ops_vs_cublas_device" in r.get("choices", {}):  # older files had decode keys only
        c = r["choices"]
        goals = {
            "ops": ("≥ 0.97 every key, ≥ 1.02 geomean", lambda x: x["min"] >= 0.97 and x["geomean"] >= 1.02),
            "triton": (
                "≥ 0.95 geomean, ≥ 0.9 every decode key",
                lambda x: x["geomean"] >= 0.95 and x["decode_min"] >= 0.9,
            ),
        }
        for impl, field in (
            ("ops", "device"),
            ("ops", "inclusive"),
            ("ops", "kernel"),
            ("triton", "device"),
            ("triton", "kernel"),
        ):
            if f"{impl}_vs_cublas_{field}" not in c:
                continue
            goal, met = goals[impl]
            x = c[f"{impl}_vs_cublas_{field}"]
            row(
                "choices",
                f"{'ops.matmul' if impl == 'ops' else 'Triton matmul'} vs cuBLAS, {field}, {c['keys']} keys "
                f"(bundle {c['bundle']}): geomean / min / decode min",
                f"{x['geomean']:.3f} / {x['min']:.3f} / {x['decode_min']:.3f}",
                goal,
                met(x),
            )
        if "cublas_vs_read_floor" in c:
            floor = c["cublas_vs_read_floor"]
            row(
                "choices",
                "how far any kernel could go: cuBLAS vs a read of B, decode keys (geomean / max); per key "
                "cuBLAS over the faster of the two / over the fastest timed, floor included (geomean)",
                f"{floor['decode_geomean']:.3f} / {floor['decode_max']:.3f}; "
                f"{c['best_of_two_kernel_geomean']:.3f} / {c['bound_kernel_geomean']:.3f}",
                "-",
                None,
            )
    for name, m in r.get("inductor", {}).items():
        first = {
            k: statistics.median(x["first_call_s"] for x in m[k]) for k in ("warm_caches", "bundle_only")
        }
        default = statistics.median(x["first_call_s"] for x in m["default_no_caches"])
        step = {k: statistics.median(x["step_ms"] for x in m[k]) for k in ("warm_caches", "bundle_only")}
        benchmarked = max(x["gemm_choices_benchmarked"] for x in m["bundle_only"])
        row(
            "inductor",
            f"torch.compile {name}: first call, max-autotune no caches / warm / bundle only; default no caches",
            f"{m['no_caches']['first_call_s']:.1f} s ({m['no_caches']['gemm_choices_benchmarked']} GEMM choices "
            f"timed) / {first['warm_caches']:.2f} s / {first['bundle_only']:.2f} s ({benchmarked}) / "
            f"{default:.2f} s = {first['bundle_only'] / default:.2f}x default; step {step['bundle_only']:.3f} vs "
            f"{step['warm_caches']:.3f} ms warm",
            "bundle ≤ 1.1x default, 0 timed, step within 3 % of warm",
            first["bundle_only"] <= 1.1 * default
            and benchmarked == 0
            and step["bundle_only"] <= 1.03 * step["warm_caches"],
        )
        if "new_shape_bundle" in m:
            n = m["new_shape_bundle"]
            row("inductor", f"{name} + one new layer shape, bundle only: GEMM autotunings", str(n["gemm_autotunings"]),
                "1", n["gemm_autotunings"] == 1)  # fmt: skip
    for name, p in r.get("programs", {}).items():
        warm = statistics.median(x["wall_s"] for x in p["triton_warm"])
        bundle = statistics.median(x["wall_s"] for x in p["bundle_only"])
        compiled = max(x["compiled"] for x in p["bundle_only"])
        warm_compiled = max(x["compiled"] for x in p["triton_warm"])
        no_warmup = (
            f"; without the warm-up {statistics.median(x['wall_s'] for x in p['no_warmup']) / warm:.3f}x"
            if p.get("no_warmup")
            else ""
        )
        row(
            "programs",
            f"{name}: whole process, no caches / Triton warm / bundle only (compiled)",
            f"{p['no_caches']['wall_s']:.2f} s ({p['no_caches']['compiled']:.0f}) / {warm:.2f} s "
            f"({warm_compiled:.0f}) / {bundle:.2f} s ({compiled:.0f}) = {bundle / warm:.3f}x warm{no_warmup}",
            "bundle ≤ 1.05x warm, 0 compiled",
            bundle <= 1.05 * warm and compiled == 0,
        )
    if "cold" in r:
        c = r["cold"]
        b = statistics.median(x["wall_s"] for x in c["triton_warm"])
        bundle = statistics.median(x["wall_s"] for x in c["bundle_only"])
        last = c["bundle_only"][-1]
        none = c["no_caches"]
        a = none["wall_s"] if none else float("nan")
        row(
            "cold",
            f"first results, {last['keys']} keys, fresh process: no caches / Triton warm / bundle only",
            f"{a:.1f} s / {b:.2f} s / {bundle:.2f} s; bundle: {last['compiled']} compiled, "
            f"{last['configs_benchmarked']} benchmarked, {last['hits']} hits, "
            f"{max(x.get('host_builds', 0) for x in c['bundle_only'])} host builds (the warm-up's too)",
            "bundle ≤ 1.00x warm, ≥ 10x faster than none; 0 compiled, 0 benchmarked",
            bundle <= b
            and (none is None or a / bundle >= 10)
            and last["compiled"] == 0
            and last["configs_benchmarked"] == 0,
        )
        without = [x["wall_s"] for x in c.get("no_warmup", [])]
        no_warmup = f", without the warm-up {statistics.median(without) / b:.3f}x" if without else ""
        lines.append(
            f"|  | ratios | bundle/warm {bundle / b:.3f}{no_warmup}, none/bundle {a / bundle:.1f}x | | |"
        )
        warm_tuning = statistics.median(x.get("autotune_seconds", 0.0) for x in c["triton_warm"])
        if warm_tuning > 0:  # Triton caches no tuning of configs with pre-hooks: a warm process re-tunes them
            untuned = statistics.median(
                x["wall_s"] - x.get("autotune_seconds", 0.0) for x in c["triton_warm"]
            )
            lines.append(
                f"|  | Triton warm's own tuning | {c['triton_warm'][-1]['autotune_benchmarks']} configs, "
                f"{warm_tuning:.2f} s per process; warm without it {untuned:.2f} s, bundle/that "
                f"{bundle / untuned:.3f}x | | |"
            )
        if "phases_s" in last:
            phases = {
                mode: "/".join(
                    f"{statistics.median(x['phases_s'][p] for x in c[mode]):.2f}" for p in last["phases_s"]
                )
                for mode in ("triton_warm", "bundle_only", "no_warmup")
                if c.get(mode)
            }
            said = "; ".join(f"{mode} {times}" for mode, times in phases.items())
            lines.append(f"|  | phases (median s): {'/'.join(last['phases_s'])} | {said} | | |")
    if "hot" in r:
        off, on = statistics.median(r["hot"]["off"]), statistics.median(r["hot"]["on"])
        row(
            "hot",
            "per-launch time, tiny autotuned kernel",
            f"{on:.2f} vs {off:.2f} µs = {on / off:.3f}x",
            "≤ 1.02x",
            on / off <= 1.02,
        )
        if "interleaved" in r["hot"]:
            ratios = [x["on"] / x["off"] for x in r["hot"]["interleaved"]]
            row(
                "hot",
                "the same, on vs off in one process (alternating blocks; per process)",
                ", ".join(f"{v:.3f}x" for v in ratios),
                "≤ 1.02x",
                statistics.median(ratios) <= 1.02,
            )
    if "quality" in r:
        q = r["quality"]["rows"]
        shipped = geomean(
            [x["exhaustive.pb.zst"] for x in q if "exhaustive.pb.zst" in x]
            + [x["bf16.pb.zst"] for x in q if "bf16.pb.zst" in x]
        )
        row(
            "quality",
            "shipped config vs best re-measured now (geomean)",
            f"{shipped:.3f}",
            "≥ 0.99",
            shipped >= 0.99,
        )
        for dtype in ("float16", "bfloat16"):
            of_dtype = [x for x in q if f"dtype={dtype}" in x["case"]]
            vs = [x["vs_cublas"] for x in of_dtype if "vs_cublas" in x]
            if vs:
                row(
                    "quality",
                    f"Triton matmul kernel vs cuBLAS, {dtype} (per key)",
                    ", ".join(f"{v:.2f}" for v in vs),
                    "≥ 0.95",
                    min(vs) >= 0.95,
                )
            ops = [x for x in of_dtype if "ops_vs_cublas" in x]
            if ops:
                row(
                    "quality",
                    f"ops.matmul (kernel selection) vs cuBLAS, {dtype} (per key: chosen)",
                    ", ".join(f"{x['ops_vs_cublas']:.2f} ({x['ops_impl']})" for x in ops),
                    "≥ 0.95",
                    min(x["ops_vs_cublas"] for x in ops) >= 0.95,
                )
        seeded = [x["seeded.pb.zst"] for x in q if "seeded.pb.zst" in x]
        if "tune" in r:
            t = r["tune"]
            share = t["seeded"]["configs_benchmarked"] / max(1, t["exhaustive"]["configs_benchmarked"])
            row(
                "tune",
                "seeded vs exhaustive: best found (geomean, re-measured now), runs",
                f"{geomean(seeded):.3f}, {share:.0%} of the runs",
                "≥ 0.98 with ≤ 30 %",
                geomean(seeded) >= 0.98 and share <= 0.30,
            )
    if "tune" in r:
        ex = r["tune"]["exhaustive"]
        pure = ex["benchmark_seconds"]
        row(
            "tune",
            "our tune wall vs pure benchmark time",
            f"{ex['seconds']:.1f} s vs {pure:.1f} s = {ex['seconds'] / pure:.2f}x "
            f"(compile {ex['compile_seconds']:.1f} s)",
            "≤ 1.3x",
            ex["seconds"] / pure <= 1.3,
        )
        if "cold" in r and r["cold"]["no_caches"]:
            triton_s = r["cold"]["no_caches"]["autotune_seconds"]
            row(
                "tune",
                "our tune vs Triton's autotuner, same keys and configs",
                f"{ex['wall_s']:.1f} s vs {triton_s:.1f} s "
                f"(+ {r['cold']['no_caches']['wall_s'] - triton_s:.1f} s rest of the process)",
                "-",
                None,
            )
    if "load" in r:
        ms = statistics.median(x["load_and_first_lookup_ms"] for x in r["load"]["runs"])
        row(
            "load",
            f"{r['load']['entries']} -entry bundle ({r['load']['bytes']} B): load + first look-up",
            f"{ms:.0f} ms",
            "< 100 ms",
            ms < 100,
        )
    if "size" in r:
        s = r["size"]
        row(
            "size",
            "bundle bytes per entry, with / without compiled kernels",
            f"{s['with_artifacts_bytes'] / s['entries']:.0f} / {s['without_artifacts_bytes'] / s['entries']:.0f}",
            "-",
            None,
        )
    if "scaling" in r:
        (one, w1), (many, w2) = list(r["scaling"].items())
        if "budget_s" in w1:
            rate1, rate2 = w1["tuned"] / w1["seconds"], w2["tuned"] / w2["seconds"]
            row(
                "scaling",
                f"full matmul keys under a time budget: keys per second, {many} vs {one}",
                f"{w2['tuned']} keys in {w2['seconds']:.0f} s vs {w1['tuned']} in {w1['seconds']:.0f} s: "
                f"{rate2 / rate1:.2f}x",
                "≥ 1.8x",
                rate2 / rate1 >= 1.8,
            )
            row(
                "scaling",
                f"merged report of {many}: compile s / benchmark s / compiled kernels, bytes",
                f"{w2['compile_seconds']:.1f} / {w2['benchmark_seconds']:.1f} / {w2['artifacts']}, "
                f"{w2['artifact_bytes']}",
                "every participant counted (non-zero)",
                w2["benchmark_seconds"] > 0 and (w2["artifacts"] == 0 or w2["artifact_bytes"] > 0),
            )
        else:  # the earlier measurement: one fixed workload, wall time
            ratio = w1["wall_s"] / w2["wall_s"]
            row(
                "scaling",
                f"tune on {many} vs {one} (the 8-key workload, wall)",
                f"{ratio:.2f}x",
                "≥ 1.7x",
                ratio >= 1.7,
            )
    if "dask" in r:
        (_, own), (_, dask) = list(r["dask"].items())
        own_rate, dask_rate = own["tuned"] / own["seconds"], dask["tuned"] / dask["seconds"]
        row(
            "dask",
            f"full matmul keys under a {own['budget_s']:.0f} s budget: keys per second, Dask vs tune's workers",
            f"{dask['tuned']} keys in {dask['seconds']:.0f} s vs {own['tuned']} in {own['seconds']:.0f} s: "
            f"{dask_rate / own_rate:.2f}x; Dask's cost {1 / dask_rate - 1 / own_rate:+.2f} s a key "
            f"(its start-up {dask.get('startup_seconds', 0):.1f} s; without it "
            f"{dask['tuned'] / (dask['seconds'] - dask.get('startup_seconds', 0)) / own_rate:.2f}x)",
            "≥ 0.95x",
            dask_rate / own_rate >= 0.95,
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", default=None, help="write the full results here (after every step)")
    parser.add_argument(
        "--steps", default=",".join(ALL_STEPS), help=f"comma-separated: {', '.join(ALL_STEPS)}, scaling, dask"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--scaling-budget", type=float, default=120.0, help="seconds of tuning per row (scaling)"
    )
    parser.add_argument("--models", default="mlp,llama", help="torch.compile models (inductor)")
    parser.add_argument(
        "--graph-cases",
        default="mlp:max-autotune-no-cudagraphs,mlp:default,llama:max-autotune-no-cudagraphs,llama:default,"
        "decoder:max-autotune-no-cudagraphs,decoder:default,decoder:max-autotune-no-cudagraphs:train",
        help="MODEL:MODE[:train],... (graphs)",
    )
    parser.add_argument("--programs", default=",".join(PROGRAMS), help="real programs (programs)")
    parser.add_argument("--entries", type=int, default=100_000, help="entries of the synthetic bundle (load)")
    parser.add_argument(
        "--table-from",
        nargs="+",
        default=None,
        help="print the table of earlier JSON files (merged) and stop",
    )
    parser.add_argument(
        "--work", default=None, help="working folder, kept: a later call's steps find its results files there"
    )
    parser.add_argument(
        "--short",
        action="store_true",
        help="diagnostic: exhaustive tune only, cold start without the no-cache row",
    )
    args = parser.parse_args()
    if args.table_from:
        merged: dict[str, Any] = {}
        for path in args.table_from:  # a step split over calls: its cases merged
            for step, value in json.loads(Path(path).read_text()).items():
                if isinstance(value, dict) and isinstance(merged.get(step), dict):
                    merged[step] = {**merged[step], **value}
                else:
                    merged[step] = value
        print(table(merged))
        return
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="tk-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    bench = Bench(work, args.json)
    steps = args.steps.split(",")
    for step in steps:
        t0 = time.perf_counter()
        if step == "tune":
            bench.tune(only_exhaustive=args.short)
        elif step == "cold":
            bench.cold(args.repeats, with_no_caches=not args.short)
        elif step == "hot":
            bench.hot(args.repeats)
        elif step == "load":
            bench.load(args.entries, args.repeats)
        elif step == "programs":
            bench.programs(args.repeats, args.programs.split(","))
        elif step == "inductor":
            bench.inductor(args.repeats, args.models.split(","))
        elif step == "graphs":
            cases = [c.split(":") for c in args.graph_cases.split(",")]
            inductor_warm.run(bench, args.repeats, [(c[0], c[1], c[2:] == ["train"]) for c in cases])
        elif step == "scaling":
            bench.scaling(args.scaling_budget)
        elif step == "dask":
            bench.dask(args.scaling_budget)
        elif step in MATMUL_TUNES:
            bench.matmul_tune(MATMUL_TUNES[step])
        else:
            getattr(bench, step)()
        print(f"[{step}] {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        bench.save()
    print(table(bench.report))


if __name__ == "__main__":
    main()
