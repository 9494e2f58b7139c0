"""The plots in BENCHMARKS.md, drawn as SVG from the result files (no plotting library needed):

    python benchmarks/plots.py [COLD.json [MATMUL.json]] [--speedup SPEEDUP.json ...] [-o benchmarks/plots]

cold-start.svg: seconds to run the 8-key workload in a fresh process, per cache state (median of the runs).
matmul-vs-cublas.svg: per full-matmul key, the Triton matmul's and ops.matmul's time over cuBLAS's
(kernel alone; below 1 is faster than cuBLAS).
tuning-speedup.svg (with --speedup FILE ...): one fixed set of keys tuned to the end on 1, 2 and 4 GPUs, the
speed-up over one GPU by tune's own workers and by Dask (each against its own machine's 1-GPU run), with
the ideal line.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import Any

WIDTH, HEIGHT, LEFT, BOTTOM, TOP = 720, 300, 60, 60, 30
COLORS = {"triton": "#4e79a7", "ops": "#f28e2b", "bar": "#4e79a7", "ours": "#59a14f"}


def _svg(body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" '
        f'font-size="12"><rect width="100%" height="100%" fill="white"/>'
        f'<text x="{WIDTH / 2}" y="18" text-anchor="middle" font-size="14">{escape(title)}</text>'
        + "".join(body)
        + "</svg>\n"
    )


def cold_start(results: dict[str, Any]) -> str:
    """One bar per cache state: no caches (autotunes and compiles), Triton's warm caches, the bundle only."""
    cold, env = results["cold"], results["environment"]
    bars = [
        ("no caches", [cold["no_caches"]] if isinstance(cold["no_caches"], dict) else cold["no_caches"]),
        ("Triton warm caches", cold["triton_warm"]),
        ("bundle only", cold["bundle_only"]),
    ]
    seconds = [(name, statistics.median(r["wall_s"] for r in runs)) for name, runs in bars]
    top = max(s for _, s in seconds) * 1.1
    plot_w, plot_h = WIDTH - LEFT - 20, HEIGHT - BOTTOM - TOP
    body = [_axis(plot_h)]
    step = plot_w / len(seconds)
    for i, (name, s) in enumerate(seconds):
        h = s / top * plot_h
        x = LEFT + i * step + step * 0.2
        color = COLORS["ours"] if name == "bundle only" else COLORS["bar"]
        body.append(
            f'<rect x="{x:.1f}" y="{TOP + plot_h - h:.1f}" width="{step * 0.6:.1f}" height="{h:.1f}" '
            f'fill="{color}"/>'
        )
        body.append(
            f'<text x="{x + step * 0.3:.1f}" y="{TOP + plot_h - h - 4:.1f}" text-anchor="middle">{s:.1f} s</text>'
        )
        body.append(
            f'<text x="{x + step * 0.3:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{escape(name)}</text>'
        )
    body.append(
        f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
        'text-anchor="middle">seconds, whole process</text>'
    )
    body.append(
        _footer(env, f"8 keys (matmul, matmul + bias + SiLU, softmax), median of {len(cold['bundle_only'])}")
    )
    return _svg(body, "A fresh process running 8 autotuned keys")


def matmul_vs_cublas(results: dict[str, Any]) -> str:
    """Per key, our time over cuBLAS's (kernel alone): the Triton matmul and ops.matmul, keys sorted by M."""
    rows = sorted(results["choices"]["rows"], key=lambda r: (r["M"], r["key"]))
    env = results["environment"]
    ratios = {
        name: [r["kernel_us"][name] / r["kernel_us"]["torch"] for r in rows] for name in ("triton", "ops")
    }
    low, high = 0.85, 1.3
    plot_w, plot_h = WIDTH - LEFT - 20, HEIGHT - BOTTOM - TOP

    def y(v: float) -> float:
        return TOP + plot_h - (min(max(v, low), high) - low) / (high - low) * plot_h

    body = [_axis(plot_h)]
    for tick in (0.9, 1.0, 1.1, 1.2, 1.3):
        body.append(
            f'<line x1="{LEFT}" x2="{WIDTH - 20}" y1="{y(tick):.1f}" y2="{y(tick):.1f}" '
            f'stroke="{"#888" if tick == 1.0 else "#ddd"}"/>'
        )
        body.append(f'<text x="{LEFT - 6}" y="{y(tick) + 4:.1f}" text-anchor="end">{tick:.1f}</text>')
    step = plot_w / len(rows)
    for name, values in ratios.items():
        for i, v in enumerate(values):
            x = LEFT + (i + 0.5) * step
            body.append(f'<circle cx="{x:.1f}" cy="{y(v):.1f}" r="2.6" fill="{COLORS[name]}"/>')
    for m in sorted({r["M"] for r in rows}):
        first = next(i for i, r in enumerate(rows) if r["M"] == m)
        body.append(f'<text x="{LEFT + (first + 0.5) * step:.1f}" y="{TOP + plot_h + 14}">{m}</text>')
    geo = {n: math.exp(statistics.fmean(math.log(v) for v in vs)) for n, vs in ratios.items()}
    legend = [
        ("triton", f"Triton matmul (geomean {geo['triton']:.3f})"),
        ("ops", f"ops.matmul (geomean {geo['ops']:.3f})"),
    ]
    for i, (name, text) in enumerate(legend):
        body.append(f'<circle cx="{LEFT + 10 + i * 260}" cy="{TOP + 8}" r="4" fill="{COLORS[name]}"/>')
        body.append(f'<text x="{LEFT + 18 + i * 260}" y="{TOP + 12}">{escape(text)}</text>')
    body.append(
        f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
        'text-anchor="middle">our time / cuBLAS time</text>'
    )
    body.append(
        _footer(env, f"{len(rows)} keys by M (fp16 and bf16, Llama-3 N x K), kernel alone, L2 flushed")
    )
    return _svg(body, "Matmul vs cuBLAS per key, time (below 1: faster than cuBLAS)")


def speedups(files: Sequence[dict[str, Any]]) -> dict[tuple[str, int], float]:
    """(via, GPUs) -> speed-up over one GPU, each against the 1-GPU run of its own file (its own machine);
    a later file's point replaces an earlier one's."""
    points = {}
    for results in files:
        rows = results["speedup"].values()
        one = next(r["wall_s"] for r in rows if r["gpus"] == 1)
        points.update({(r["via"], r["gpus"]): one / r["wall_s"] for r in rows if r["gpus"] > 1})
    return points


def tuning_speedup(files: Sequence[dict[str, Any]]) -> str:
    """Speed-up over one GPU against GPUs, tune's own workers and Dask, and the ideal line."""
    env = files[-1]["environment"]
    measured = speedups(files)
    top = max(g for _, g in measured)
    plot_w, plot_h = WIDTH - LEFT - 200, HEIGHT - BOTTOM - TOP

    def xy(gpus: float, speed: float) -> tuple[float, float]:
        return LEFT + (gpus - 1) / (top - 1) * plot_w, TOP + plot_h - (speed - 1) / (top - 1) * plot_h

    body = [_axis(plot_h)]
    for g in range(1, top + 1):
        x, y = xy(g, g)
        body.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>')
        body.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{g}x</text>')
        body.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">{g}</text>')
    (x0, y0), (x1, y1) = xy(1, 1), xy(top, top)
    body.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y1}" stroke="#888" stroke-dasharray="5,4"/>')
    lines = [("tune", "tune's own workers", COLORS["triton"]), ("dask", "--dask local", COLORS["ops"])]
    for i, (via, name, color) in enumerate(lines):
        points = [(1, 1.0), *sorted((g, v) for (way, g), v in measured.items() if way == via)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(g, v) for g, v in points))
        body.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for g, v in points[1:]:
            x, y = xy(g, v)
            body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>')
            body.append(f'<text x="{x + 8:.1f}" y="{y + (14 if via == "dask" else -6):.1f}">{v:.2f}x</text>')
        body.append(f'<circle cx="{LEFT + plot_w + 30}" cy="{TOP + 20 + i * 20}" r="4" fill="{color}"/>')
        body.append(f'<text x="{LEFT + plot_w + 40}" y="{TOP + 24 + i * 20}">{escape(name)}</text>')
    body.append(f'<text x="{LEFT + plot_w + 40}" y="{TOP + 64}">- - ideal</text>')
    body.append(f'<text x="{LEFT + plot_w / 2}" y="{TOP + plot_h + 34}" text-anchor="middle">GPUs</text>')
    body.append(
        f'<text x="14" y="{TOP + plot_h / 2}" transform="rotate(-90 14 {TOP + plot_h / 2})" '
        'text-anchor="middle">speed-up over 1 GPU</text>'
    )
    keys = len(next(iter(files[-1]["speedup"].values()))["winners"])
    body.append(_footer(env, f"{keys} full keys tuned to the end, wall time with start-up"))
    return _svg(body, "Tuning one set of keys on more GPUs of one machine")


def _axis(plot_h: float) -> str:
    return f'<line x1="{LEFT}" x2="{LEFT}" y1="{TOP}" y2="{TOP + plot_h}" stroke="black"/>'


def _footer(env: dict[str, Any], what: str) -> str:
    said = f"{what}; {env['device']}, torch {env['torch']}, triton {env['triton']}, {env['date']}"
    return (
        f'<text x="{WIDTH / 2}" y="{HEIGHT - 12}" text-anchor="middle" font-size="11">{escape(said)}</text>'
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cold", nargs="?", help="a benchmarks/run.py result with the cold step")
    parser.add_argument("matmul", nargs="?", help="a benchmarks/run.py result with the choices step")
    parser.add_argument(
        "-o", "--output", default=str(Path(__file__).parent / "plots"), help="folder for the SVGs"
    )
    parser.add_argument(
        "--speedup",
        nargs="+",
        help="benchmarks/run.py results with the speedup step, oldest first (each point against its own "
        "file's 1-GPU run; a later file's replaces an earlier one's)",
    )
    args = parser.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    drawn = []
    for name, path, draw in (
        ("cold-start.svg", args.cold, cold_start),
        ("matmul-vs-cublas.svg", args.matmul, matmul_vs_cublas),
    ):
        if path:
            (out / name).write_text(draw(json.loads(Path(path).read_text())))
            drawn.append(str(out / name))
    if args.speedup:
        files = [json.loads(Path(p).read_text()) for p in args.speedup]
        (out / "tuning-speedup.svg").write_text(tuning_speedup(files))
        drawn.append(str(out / "tuning-speedup.svg"))
    print(f"wrote {', '.join(drawn) or 'nothing (no result file given)'}")


if __name__ == "__main__":
    main()
