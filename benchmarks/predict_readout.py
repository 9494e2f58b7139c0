"""The `predict` step's readout made again from a run's tuned files, on any machine: each held-out key's
predicted config, the nearest training key's winner and the first config kept, each scored by the times the
run measured at that key (no GPU needed: every config's time is in the files).

  python benchmarks/predict_readout.py TUNED.pb.zst [...] --environment RUN.json --out READOUT.json

TUNED: the `predict-all.pb` files the calls of a GPU run kept (a kernel in several: the last file's);
RUN.json: that run's `--json`, whose environment (GPU, driver, torch, Triton) the readout keeps.
--each-part: also prints each kernel's predicted geomean / worst with the waves left out, and with the
waves counting one program per multiprocessor (the residency recorded at tune time left out)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from steps.predict import corpus_module, kernel_configs, readout, tilings

from tuned_kernels.results import read_results


def reread(tuned: list[Path], environment: dict[str, Any]) -> dict[str, Any]:
    """One report of the tuned files, read out by this checkout's prediction."""
    corpus = corpus_module()
    firsts, tiled = kernel_configs(corpus, every_gpu=True), tilings(corpus, every_gpu=True)
    kernels: dict[str, Any] = {}
    for path in tuned:
        kernels |= readout(read_results(path), str(path), corpus.training, firsts, tiled)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parent,
    ).stdout.strip()
    read_out = {"date": time.strftime("%Y-%m-%d"), "commit": commit, "files": [p.name for p in tuned]}
    return {"environment": environment, "predict": {"read_out": read_out, "kernels": kernels}}


def each_part(tuned: list[Path]) -> list[str]:
    """Per kernel, the prediction's geomean / worst with its parts left out, then as committed."""
    corpus = corpus_module()
    firsts, tiled = kernel_configs(corpus, every_gpu=True), tilings(corpus, every_gpu=True)
    lines = []
    for path in tuned:
        results = read_results(path)
        alone = dataclasses.replace(  # the residency left out: one program per multiprocessor
            results,
            entries=tuple(
                dataclasses.replace(e, timings=tuple(dataclasses.replace(t, resident=0) for t in e.timings))
                for e in results.entries
            ),
        )
        parts = {
            "no waves": readout(results, str(path), corpus.training, firsts, {}),
            "waves, one program each": readout(alone, str(path), corpus.training, firsts, tiled),
            "as committed": readout(results, str(path), corpus.training, firsts, tiled),
        }
        for name in parts["as committed"]:
            said = (f"{part} {k[name]['predicted']['geomean']:.3f} / {k[name]['predicted']['worst']:.3f}"
                    for part, k in parts.items())  # fmt: skip
            lines.append(f"{name}: {'; '.join(said)}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("tuned", nargs="+", type=Path, help="the run's tuned files (predict-all.pb)")
    parser.add_argument("--environment", type=Path, required=True, help="the run's --json")
    parser.add_argument("--out", type=Path, required=True, help="the readout (the `predict` step's format)")
    parser.add_argument("--each-part", action="store_true", help="also: the prediction with parts left out")
    args = parser.parse_args()
    report = reread(args.tuned, json.loads(args.environment.read_text())["environment"])
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    for name, k in report["predict"]["kernels"].items():
        p = k["predicted"]
        print(
            f"{name}: {p['of']} held out, {k['training_keys']} tuned: {p['geomean']:.3f} / {p['worst']:.3f}"
        )
    if args.each_part:
        print("\n".join(each_part(args.tuned)))


if __name__ == "__main__":
    main()
