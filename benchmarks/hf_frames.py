"""Where a bundle serves Hugging Face transformers models nobody here wrote, on the CPU (Inductor's C++
back end) or a GPU: each case (a model of tests/corpora/hf_frames_app.py, compiled in one of the ways its
users write) is captured in one folder, then served from its bundle in another, each in a fresh process with
empty caches of its own. A row says how many Dynamo frames the capture saved, whether the served run loaded
them (Dynamo traced nothing), found its graphs in the caches the bundle filled or compiled any, the
autotuning Inductor ran in it, and whether its outputs equal the capture's. With --baselines, the first
compiled call also runs without tuned-kernels with empty caches and again with those caches warm, and the
row sets the served first call beside both.

    python benchmarks/hf_frames.py [--cases gpt2:compile,...] [--device cuda] [--mode max-autotune]
                                   [--baselines] [--out results.md]

Name the file by date and commit (`results-DEVICE-DATE-COMMIT-hf-frames.md`): a GPU machine's copy of the
tree may not know its commit."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "tests" / "corpora" / "hf_frames_app.py"
ARCHITECTURES = [
    "gpt2",
    "llama",
    "mistral",
    "qwen2",
    "gemma",
    "phi3",
    "gpt_neox",
    "bloom",
    "opt",
    "mixtral",
    "qwen2_moe",
    "mamba",
    "bert",
    "roberta",
    "t5",
    "bart",
    "vit",
    "resnet",
    "convnext",
]
STYLES = ("fullgraph", "module-compile", "decorated", "two-lengths", "graph-break", "train")
CASES = [f"{a}:compile" for a in ARCHITECTURES] + [f"gpt2:{s}" for s in STYLES] + ["llama:train"]
RUN_S = 900


def run(folder: Path, command: list[str], **extra: str) -> tuple[dict[str, Any], str, float]:
    """The command in `folder`, its HOME, with the Inductor, Triton and overlay caches there (empty at the
    folder's first run): the app's report, its standard error and its wall time."""
    folder.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUNED_KERNELS", "TORCHINDUCTOR"))}
    env |= {
        "HOME": str(folder),
        "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        "TRITON_CACHE_DIR": str(folder / "triton"),
        "TUNED_KERNELS_CACHE_DIR": str(folder / "overlay"),
        "HF_HUB_OFFLINE": "1",
        "TORCHINDUCTOR_VEC_ISA_OK": "1",
        **extra,
    }
    started, spawned_at = time.perf_counter(), time.time()
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, text=True, timeout=RUN_S)
    wall = time.perf_counter() - started
    if done.returncode != 0 or "RESULT " not in done.stdout:
        return (
            # its last lines: the record keeps them, the table shows the last
            {"failed": done.stderr.strip().splitlines()[-30:] or ["no output"], "exit": done.returncode},
            done.stderr,
            wall,
        )
    report = json.loads(done.stdout.split("RESULT ", 1)[1].splitlines()[0])
    # from starting the process to the first compiled result: Python, imports, tuned-kernels' own start
    report["to_first_result_s"] = round(report.pop("first_result_at") - spawned_at, 3)
    return report, done.stderr, wall


def case(name: str, folder: Path, device: str, mode: str, baselines: bool) -> dict[str, Any]:
    arch, style = name.split(":")
    bundle = folder / "bundle.pb.zst"
    app = [sys.executable, str(APP), arch, style, device, *([mode] if mode != "default" else [])]
    on = {"TRITON_INTERPRET": "1"} if device == "cpu" else {}  # Triton's kernels on the CPU, if any
    captured, said, capture_s = run(
        folder / "capture",
        [sys.executable, "-m", "tuned_kernels", "capture", "-o", str(bundle), "--", *app],
        **on,
    )
    saved = re.search(r"(\d+) Dynamo frames?,", said)
    not_saved = [line for line in said.splitlines() if "Dynamo frame" in line and "not saved" in line]
    row: dict[str, Any] = {
        "case": name,
        "capture": captured,
        "capture_s": round(capture_s, 1),
        "frames_saved": int(saved[1]) if saved else 0,
        "first_not_saved": not_saved[0].split("tuned-kernels: ", 1)[-1][:300] if not_saved else None,
    }
    if "failed" in captured:
        return row
    served, said, serve_s = run(
        folder / "served",
        app,
        TUNED_KERNELS="1",
        TUNED_KERNELS_PATH=str(bundle),
        TUNED_KERNELS_VERBOSE="1",
        **on,
    )
    summary = [line for line in said.splitlines() if "torch.compile graphs:" in line]
    row |= {"served": served, "serve_s": round(serve_s, 1), "summary": summary[0] if summary else None}
    if baselines:
        for plain in ("cold", "warm"):  # warm: Inductor's caches as the cold run left them
            row[plain], _, seconds = run(folder / "plain", app, **on)
            row[f"{plain}_s"] = round(seconds, 1)
    return row


def verdict(row: dict[str, Any]) -> str:
    served = row.get("served", {})
    if "failed" in row["capture"] or "failed" in served:
        return "failed"
    if served.get("objects_compiled") or served.get("fxgraph_misses"):
        return "compiled"
    if served.get("graphs_traced") == 0:
        return "frames loaded, nothing traced"
    return "traced, graphs from the caches"


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model:how compiled | frames saved | served | frames loaded / traced | graphs from caches | compiled "
        "| Inductor tuned: benchmarks / autotunes / coordinate descents | first call s: served vs default, no "
        "caches / warm | process start to first result s: the same | outputs | why a run failed, or a frame "
        "was not saved (first) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        served = row.get("served", {})
        same = served.get("digest") is not None and served.get("digest") == row["capture"].get("digest")
        outputs = "-" if served.get("digest") is None else "equal" if same else "DIFFER"  # no served run: -
        tuned = " / ".join(
            str(served.get(k, "-"))
            for k in ("gpu_benchmarks", "generated_kernel_autotunes", "coordinate_descent")
        )
        lines.append(
            f"| {row['case']} | {row['frames_saved']} | {verdict(row)} | "
            f"{served.get('frames_served', '-')} / {served.get('graphs_traced', '-')} | "
            f"{served.get('fxgraph_hits', '-')} | {len(served.get('objects_compiled') or [])} | {tuned} | "
            f"{first_calls(row)} | {first_calls(row, 'to_first_result_s')} | {outputs} | "
            f"{why_not(row).replace('|', '/')[:160]} |"
        )
    return "\n".join(lines)


def why_not(row: dict[str, Any]) -> str:
    """Why a run failed (the last line it printed), else why a frame was not saved (the first said), else ''."""
    for run_name in ("capture", "served"):
        failed = row.get(run_name, {}).get("failed")
        if failed:
            return f"the {run_name} run failed: {failed[-1]}"
    return str(row["first_not_saved"] or "")


def first_calls(row: dict[str, Any], measure: str = "first_call_s") -> str:
    """The served run's `measure` (seconds) beside the plain runs' (cold, warm) and as a share of each."""
    served = row.get("served", {}).get(measure)
    if served is None:
        return "-"
    said = f"{served:.2f}"
    plain = [row.get(k, {}).get(measure) for k in ("cold", "warm")]
    if None in plain:
        return said
    cold, warm = plain
    return f"{said} vs {cold:.2f} / {warm:.2f} = {served / cold:.2f}x / {served / warm:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", default=",".join(CASES), help="MODEL:STYLE,... (hf_frames_app.py's)")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument(
        "--mode", default="default", help="torch.compile's mode, e.g. max-autotune-no-cudagraphs"
    )
    parser.add_argument(
        "--baselines", action="store_true", help="also time the first call without tuned-kernels"
    )
    parser.add_argument("--out", type=Path, help="the table and each case's record, as Markdown")
    args = parser.parse_args()
    import torch
    import transformers

    device = torch.cuda.get_device_name() if args.device == "cuda" else "the CPU"
    header = (
        f"Hugging Face models served from bundles on {device}, torch.compile mode {args.mode}, "
        f"{datetime.date.today()}: torch {torch.__version__}, transformers "
        f"{transformers.__version__}, Python {platform.python_version()}; `python benchmarks/hf_frames.py "
        f"{' '.join(sys.argv[1:])}`. Each case captured in one folder and served in another, fresh processes, "
        "empty caches. 'frames loaded / traced': Dynamo frames the served run loaded from the bundle / graphs "
        "Dynamo traced in it; 'graphs from caches': Inductor's FX-graph hits; 'Inductor tuned': what it really "
        "benchmarked, autotuned and coordinate-descended in the served run; 'first call': the first compiled "
        "call to its result; 'process start to first result': from starting the program (Python, imports, "
        "tuned-kernels' own start, building the model, the eager reference run) to that result.\n"
    )
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="hf-frames-") as scratch:
        for at, name in enumerate(args.cases.split(",")):
            rows.append(case(name, Path(scratch) / str(at), args.device, args.mode, args.baselines))
            print(table(rows[-1:]).splitlines()[-1], flush=True)
            if args.out:  # after each case: a run stopped at its time limit keeps the cases it finished
                records = "\n".join(json.dumps(row) for row in rows)
                args.out.write_text(
                    f"{header}\n{table(rows)}\n\nEach case's record:\n\n```\n{records}\n```\n"
                )
    print(f"{header}\n{table(rows)}")


if __name__ == "__main__":
    main()
