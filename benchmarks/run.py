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
  dask     --dask-kernels' full keys for --scaling-budget seconds on every visible GPU, tune's own workers
           vs `--dask local` (a Dask worker per GPU): keys per second of each and Dask's cost per key; with a
           budget both finish within, the same keys (`--steps dask`)
  speedup  benchmarks/speedup_corpus.py's 62 full keys tuned to the end, no budget, for each of
           --speedup-runs (1, 2, 2d, 4, 4d: that many GPUs, d through `--dask local`): wall time with
           start-up, each GPU's time split and the winners against the 1-GPU run's (`--steps speedup`;
           split the runs over calls and merge the files with --table-from)
  predict  every key of benchmarks/prediction_corpus.py tuned to the end; each held-out key's predicted
           config, nearest training key's winner and first config as speed ratios to its own winner
           (--predict-kernels picks families)
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
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import inductor_warm  # each step's own module: beside this script, on its path
from bench import Bench
from steps import cold, hot, inductor, load, predict, programs, quality, scaling, tune
from table import table

ALL_STEPS = ("tune", "cold", "hot", "quality", "load", "size")
PROGRAMS = programs.PROGRAMS


def run_step(bench: Bench, step: str, args: argparse.Namespace) -> None:
    """Runs one step (its module writes into bench.report)."""
    if step == "tune":
        tune.run(bench, only_exhaustive=args.short)
    elif step == "cold":
        cold.run(bench, args.repeats, with_no_caches=not args.short)
    elif step == "hot":
        hot.run(bench, args.repeats)
    elif step == "load":
        load.run(bench, args.entries, args.repeats)
    elif step == "programs":
        programs.run(bench, args.repeats, args.programs.split(","))
    elif step == "inductor":
        inductor.run(bench, args.repeats, args.models.split(","))
    elif step == "graphs":
        cases = [c.split(":") for c in args.graph_cases.split(",")]
        cases_run = [(c[0], c[1], c[2:] == ["train"]) for c in cases]
        inductor_warm.run(
            bench,
            args.repeats,
            cases_run,
            on_cuda1=args.graphs_on_cuda1,
            samples=args.graph_samples,
            steady_only=args.graphs_steady_only,
            second_warm=args.graphs_second_warm,
        )
    elif step == "scaling":
        scaling.run(bench, args.scaling_budget)
    elif step == "dask":
        scaling.dask(bench, args.scaling_budget, args.dask_kernels.split(","))
    elif step == "predict":
        predict.run(bench, [k for k in args.predict_kernels.split(",") if k], budget_s=args.predict_budget)
    elif step == "speedup":
        scaling.speedup(bench, args.speedup_runs.split(","))
    elif step in tune.MATMUL_TUNES:
        tune.matmul_tune(bench, tune.MATMUL_TUNES[step])
    elif step == "quality":
        quality.run(bench)
    elif step == "choices":
        quality.choices(bench)
    elif step == "size":
        load.size(bench)
    else:
        raise SystemExit(f"unknown step {step}")


def graph_arguments(parser: argparse.ArgumentParser) -> None:
    """The `graphs` step's options."""
    parser.add_argument(
        "--graph-cases",
        default="mlp:max-autotune-no-cudagraphs,mlp:default,llama:max-autotune-no-cudagraphs,llama:default,"
        "decoder:max-autotune-no-cudagraphs,decoder:default,decoder:max-autotune-no-cudagraphs:train",
        help="MODEL:MODE[:train],... (graphs)",
    )
    parser.add_argument(
        "--graph-samples",
        default=None,
        help="graphs: a folder for each first call's sampled stacks (bundle, warm and default runs), "
        "as benchmarks/first_call_samples.py reads them",
    )
    parser.add_argument(
        "--graphs-on-cuda1",
        action="store_true",
        help="graphs: also serve each capture (made on cuda:0) to the program on cuda:1 (two GPUs)",
    )
    parser.add_argument(
        "--graphs-steady-only",
        action="store_true",
        help="graphs: the bundle's and the warm machine's runs alone, for their steady steps (no traced row, "
        "no default-mode baseline)",
    )
    parser.add_argument(
        "--graphs-second-warm",
        action="store_true",
        help="graphs: a second warm machine, made by its own tuning, in the same rounds (how far two tunings "
        "of one machine are apart)",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--json", default=None, help="write the full results here (after every step)")
    parser.add_argument(
        "--steps",
        default=",".join(ALL_STEPS),
        help=f"comma-separated: {', '.join(ALL_STEPS)}, scaling, dask, speedup, predict",
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--scaling-budget", type=float, default=120.0, help="seconds of tuning per row (scaling)"
    )
    parser.add_argument(
        "--dask-kernels", default="matmul,matmul_skinny,matmul_tma", help="the families tuned (dask)"
    )
    parser.add_argument(
        "--speedup-runs", default="1,2,2d,4,4d", help="GPUs per run, d: through --dask local (speedup)"
    )
    parser.add_argument(
        "--predict-kernels",
        default="",
        help="families of prediction_corpus.py to tune (predict; all if empty)",
    )
    parser.add_argument(
        "--predict-budget", type=float, default=480.0, help="seconds at most for the predict step's tune"
    )
    parser.add_argument("--models", default="mlp,llama", help="torch.compile models (inductor)")
    graph_arguments(parser)
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
            merged = merged_reports(merged, json.loads(Path(path).read_text()))
        print(table(merged))
        return
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="tk-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    bench = Bench(work, args.json)
    steps = args.steps.split(",")
    for step in steps:
        t0 = time.perf_counter()
        run_step(bench, step, args)
        print(f"[{step}] {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        bench.save()
    print(table(bench.report))


def merged_reports(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """`b` over `a`, dicts merged at every depth (a step's kernels or cases from two files)."""
    out = dict(a)
    for name, value in b.items():
        held = out.get(name)
        out[name] = (
            merged_reports(held, value) if isinstance(held, dict) and isinstance(value, dict) else value
        )
    return out


if __name__ == "__main__":
    main()
