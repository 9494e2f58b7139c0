"""Whether the GPUs of one host rank a key's close configs alike. For each key whose winner differs between
the one-GPU run of a speedup file and one of its multi-GPU runs, the configs those runs chose are timed on
every GPU of this host (a process per GPU, all at once, as a tune runs them), as the tuner times them (the
least repetition, from a CUDA graph), in alternating rounds. Prints, per key and GPU, each config's median
over the rounds, the spread of its rounds, and which config that GPU ranks first: where GPUs rank the pair
differently by more than their rounds spread, the cards differ, and no tuner decides that key alike on each.

    python benchmarks/card_ranking.py --from results-...-speedup.json [--rounds 5] [--json OUT]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

WORKER_TIMEOUT_S = 400


def contested(speedup: dict[str, Any]) -> dict[str, list[str]]:
    """Each key whose winner differs between the one-GPU run and a multi-GPU run, with the configs chosen
    (the one-GPU run's first)."""
    one = speedup["1 GPU, tune"]["winners"]
    keys: dict[str, list[str]] = {}
    for label, run in speedup.items():
        if label == "1 GPU, tune" or "winners" not in run:
            continue
        for key, won in run["winners"].items():
            if key in one and won["best"] != one[key]["best"]:
                chosen = keys.setdefault(key, [one[key]["best"]])
                if won["best"] not in chosen:
                    chosen.append(won["best"])
    return keys


def time_on_this_gpu(wanted: dict[str, list[str]], rounds: int) -> dict[str, dict[str, list[float]]]:
    """Each wanted key's configs, timed `rounds` times in alternating order on this process's GPU."""
    from speedup_corpus import CORPUS
    from tuned_kernels.aot.kinds import kind_of, longest_first
    from tuned_kernels.aot.tune_report import TuneOptions
    from tuned_kernels.aot.tuner import Tuner
    from tuned_kernels.aot.work import work_items
    from tuned_kernels.hardware import detect

    from tuned_kernels.triton_edge.benchmarker import default_benchmarker
    from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity
    from tuned_kernels.triton_edge.launch import config_space, forced_config

    tuner = Tuner(detect(), "cuda", default_benchmarker(on_gpu=True), TuneOptions())
    times: dict[str, dict[str, list[float]]] = {}
    items = work_items(CORPUS, "full", (0, 1))
    for item in (items[i] for i in longest_first(items)):  # a key's case as tune picks it: the longest
        kernel = item.family.kernel
        key, named, inputs = tuner.key_of(item)
        name = f"{kernel_identity(kernel).name} {key}"
        if name not in wanted or name in times:
            continue
        space = {config_from_triton(c).describe(): c for c in config_space(kernel, named)}
        benchmarker = kind_of(kernel).benchmarker(tuner.benchmarker)
        configs = [c for c in wanted[name] if c in space]
        for config in configs:  # compiled and run once before any timing
            with forced_config(kernel, space[config]):
                item.family.run(inputs)
        times[name] = {c: [] for c in configs}
        run = functools.partial(item.family.run, inputs)
        for round_ in range(rounds):
            for config in configs if round_ % 2 == 0 else configs[::-1]:
                with forced_config(kernel, space[config]):
                    times[name][config].append(benchmarker(run))
    return times


def ranking(times: dict[str, list[float]]) -> dict[str, Any]:
    """A GPU's medians, the spread of each config's rounds (largest over least), its first config, and each
    round's times."""
    medians = {c: statistics.median(ts) for c, ts in times.items() if ts}
    return {
        "rounds_ms": {c: [round(t, 5) for t in ts] for c, ts in times.items()},
        "median_ms": {c: round(m, 5) for c, m in medians.items()},
        "spread": {c: round(max(ts) / min(ts), 4) for c, ts in times.items() if ts},
        "first": min(medians, key=medians.__getitem__) if medians else None,
    }


def table(report: dict[str, Any]) -> list[str]:
    """Per key: each GPU's time of the second config over the first (the one-GPU run's winner), with the
    larger spread of the two configs' rounds."""
    gpus = sorted({g for row in report["card_ranking"].values() for g in row["gpus"]})
    heads = " | ".join(f"{g}: other / winner (spread)" for g in gpus)
    lines = [f"| key | configs (1-GPU run's winner; other) | {heads} |", "|---|---|" + "---|" * len(gpus)]
    for key, row in report["card_ranking"].items():
        winner, other = row["configs"][0], row["configs"][1]
        cells = []
        for gpu in gpus:
            ranked = row["gpus"].get(gpu)
            if ranked is None or other not in ranked["median_ms"] or winner not in ranked["median_ms"]:
                cells.append("-")
                continue
            ratio = ranked["median_ms"][other] / ranked["median_ms"][winner]
            spread = max(ranked["spread"][winner], ranked["spread"][other])
            cells.append(f"{ratio:.3f} ({spread:.3f})")
        lines.append(f"| {key} | {winner}; {other} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--from", dest="source", help="a speedup result file (its `speedup` runs)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--table-from", help="print the table of a result file, and nothing else")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # a file of wanted keys: time them here
    args = parser.parse_args()
    if args.table_from:
        print("\n".join(table(json.loads(Path(args.table_from).read_text()))))
        return
    if args.worker:
        print(json.dumps(time_on_this_gpu(json.loads(Path(args.worker).read_text()), args.rounds)))
        return

    import torch
    import triton

    wanted = contested(json.loads(Path(args.source).read_text())["speedup"])
    print(f"{len(wanted)} keys whose winners differ", flush=True)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as keys_file:
        json.dump(wanted, keys_file)
    gpus = torch.cuda.device_count()
    workers = {
        f"GPU {gpu}": subprocess.Popen(
            [sys.executable, __file__, "--worker", keys_file.name, "--rounds", str(args.rounds)],
            stdout=subprocess.PIPE, text=True, env={**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu)},
        )
        for gpu in range(gpus)
    }  # fmt: skip
    per_gpu = {gpu: json.loads(w.communicate(timeout=WORKER_TIMEOUT_S)[0]) for gpu, w in workers.items()}
    os.unlink(keys_file.name)
    report = {
        "environment": {
            "device": torch.cuda.get_device_name(0), "gpus": gpus, "torch": torch.__version__,
            "triton": triton.__version__, "rounds": args.rounds, "from": Path(args.source).name,
        },
        "card_ranking": {
            key: {"configs": configs, "gpus": {g: ranking(t[key]) for g, t in per_gpu.items() if key in t}}
            for key, configs in wanted.items()
        },
    }  # fmt: skip
    print("\n".join(table(report)), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
