"""The `predict` step: every key of benchmarks/prediction_corpus.py tuned to the end (every config's time
kept), then, for each held-out key, the config predicted from the training keys alone, the nearest training
key's winner, and the first config the kernel's pruning keeps there (what Triton launches untuned), each as
a speed ratio to that key's own winner, read from the times measured at that key. Its verdicts."""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import Bench

if TYPE_CHECKING:
    from table import Table

    from tuned_kernels import model

PREDICTION_CORPUS = str(Path(__file__).parent.parent / "prediction_corpus.py")
GOALS = {"geomean": 0.95, "worst": 0.85}  # predicted vs the per-key winner
FIRST_CALL_GOAL = 1.2  # a predicted key's first call over a hit's


def run(bench: Bench, kernels: list[str], corpus: str = PREDICTION_CORPUS, budget_s: float = 480.0) -> None:
    """`kernels`: the corpus's families to tune (all when empty). The tuned file is kept beside the JSON."""
    output = Path(bench.json_path).with_name("predict-all.pb") if bench.json_path else bench.work / "all.pb"
    argv = ["tune", "--shapes", "full", "--corpus", corpus, "-o", str(output), "--json"]
    argv += [a for k in kernels for a in ("--kernels", k)]
    argv += ["--time-budget", str(budget_s)]  # a guard: every key is meant to be tuned within it
    wall, text = bench.tool(argv, bench.env())
    from tuned_kernels.results import read_results

    module = corpus_module(corpus)
    bench.report["predict"] = {
        "tune_wall_s": wall,
        "tune": json.loads(text),
        "kernels": readout(
            read_results(output), str(output), module.training, kernel_configs(module), tilings(module)
        ),
    }


def corpus_module(corpus: str = PREDICTION_CORPUS) -> Any:
    """benchmarks/prediction_corpus.py (or `corpus`), loaded by path as `tune --corpus` loads it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("prediction_corpus", corpus)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_configs(corpus: Any, every_gpu: bool = False) -> dict[str, list[model.Config]]:
    """Each corpus kernel's configs in the kernel's own order (`every_gpu`: the built-in kernels this GPU
    does not tune too, to read a file tuned on another)."""
    return {_name(f.kernel): [_config(c) for c in f.kernel.configs] for f in _families(corpus, every_gpu)}


def _families(corpus: Any, every_gpu: bool) -> list[Any]:
    families = list(corpus.CORPUS)
    if every_gpu:
        from tuned_kernels.aot.kernels.builtin import CORPUS as BUILTIN

        families = [*BUILTIN, *families]
    return families


def tilings(corpus: Any, every_gpu: bool = False) -> dict[str, Any]:
    """Each corpus kernel's tiling as serving reads it (its key's names, whether it loops over its tiles;
    the GPU's multiprocessors left to the tuned file's): the corpus launches pass every key argument."""
    from tuned_kernels.prediction import Tiling
    from tuned_kernels.triton_edge.keys import launches_persistent

    families = _families(corpus, every_gpu)
    return {_name(f.kernel): Tiling(tuple(f.kernel.keys), 0, launches_persistent(f.kernel)) for f in families}


def readout(
    results: model.Results,
    source: str,
    training: Callable[[str, tuple[Any, ...]], bool],
    firsts: dict[str, list[model.Config]],
    tilings: dict[str, Any],
) -> dict[str, Any]:
    """Per kernel of a tuned file's `results`: each held-out key's ratios (its winner's time over the
    config's) for the prediction, the nearest training key's winner and the first config kept, with their
    geomeans and worst. The prediction knows the kernel's tiling where `tilings` has it (on the tuned file's
    GPU's multiprocessors)."""
    import dataclasses

    from tuned_kernels.nearest import nearest_key
    from tuned_kernels.prediction import predict

    by_kernel: dict[str, list[model.Entry]] = {}
    for entry in results.entries:
        by_kernel.setdefault(entry.kernel.name, []).append(entry)
    processors = results.header.target.multiprocessor_count
    kernels = {}
    for name, entries in sorted(by_kernel.items()):
        tuned = {e.key: (e, source) for e in entries if training(name, e.key)}
        tiling = dataclasses.replace(tilings[name], processors=processors) if name in tilings else None
        rows = []
        for held in (e for e in entries if not training(name, e.key)):
            times = {t.config: t.time_ms for t in held.timings}
            allowed = [c for c in firsts.get(name, []) if c in times] or list(times)
            guess = predict(held.key, tuned, allowed, tiling)
            near = nearest_key(held.key, tuned)
            picks = {
                "predicted": guess.config if guess else None,
                "nearest": tuned[near][0].best if near is not None else None,
                "first": allowed[0] if allowed else None,
            }
            rows.append({
                "key": [str(v) for v in held.key],
                "winner": held.best.describe(),
                **{k: _ratio(held.best_time_ms, times, c) for k, c in picks.items()},
                "predicted_config": picks["predicted"].describe() if picks["predicted"] else None,
            })  # fmt: skip
        kernels[name] = {"training_keys": len(tuned), "held_out": rows, **_summary(rows)}
    return kernels


def _ratio(best_ms: float, times: dict[model.Config, float], config: model.Config | None) -> float | None:
    """The winner's time over `config`'s at this key (None: not timed here, as a config the pruning drops)."""
    if config is None or config not in times or not math.isfinite(times[config]) or times[config] <= 0:
        return None
    return best_ms / times[config]


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out = {}
    for kind in ("predicted", "nearest", "first"):
        ratios = [r[kind] for r in rows if r[kind] is not None]
        out[kind] = {
            "geomean": statistics.geometric_mean(ratios) if ratios else None,
            "worst": min(ratios, default=None),
            "measured": len(ratios),
            "of": len(rows),
        }
    return out


def _name(kernel: Any) -> str:
    from tuned_kernels.triton_edge.keys import kernel_identity

    return kernel_identity(kernel).name


def _config(config: Any) -> model.Config:
    from tuned_kernels.triton_edge.keys import config_from_triton

    return config_from_triton(config)


def verdicts(report: dict[str, Any], t: Table) -> None:
    """One row per kernel: the prediction's geomean and worst ratio to each held-out key's winner, beside the
    nearest key's winner and the first config kept; and the first call's row."""
    first_call_verdict(report, t)
    for name, k in report.get("predict", {}).get("kernels", {}).items():
        p, n, f = k["predicted"], k["nearest"], k["first"]
        if p["geomean"] is None:
            continue
        t.row(
            "predict",
            f"{name.rsplit('.', 1)[-1]}: {p['of']} held-out keys served a config predicted from "
            f"{k['training_keys']} tuned keys, vs each key's own winner (geomean / worst)",
            f"**{_fmt(p)}**; nearest key's winner {_fmt(n)}; first config {_fmt(f)}",
            f"≥ {GOALS['geomean']} / ≥ {GOALS['worst']}",
            p["geomean"] >= GOALS["geomean"] and p["worst"] >= GOALS["worst"] and p["measured"] == p["of"],
        )


def first_call_verdict(report: dict[str, Any], t: Table) -> None:
    """benchmarks/predict_first_call.py's file: a held-out key's first call, served a predicted config whose
    compiled kernel the bundle holds, over a hit's."""
    cases = report.get("predict_first", {}).get("cases")
    if not cases:
        return
    hit, new, own = (cases[k] for k in ("hit", "predicted", "Triton's own tuning"))
    ratio = new["median_s"] / hit["median_s"]
    compiled = max(r["compiled"] for r in new["runs"])
    t.row(
        "predict",
        f"first call, fresh process, empty Triton cache: a key never tuned (M={new['m']}) served a predicted "
        f"config whose compiled kernel the bundle holds, vs a hit (M={hit['m']}); median of {len(new['runs'])}",
        f"{new['median_s']:.3f} s vs {hit['median_s']:.3f} s = **{ratio:.2f}x**; {compiled} compiled; "
        f"Triton's own tuning {own['median_s']:.2f} s",
        f"≤ {FIRST_CALL_GOAL}x, 0 compiled",
        ratio <= FIRST_CALL_GOAL and compiled == 0,
    )


def _fmt(s: dict[str, Any]) -> str:
    if s["geomean"] is None:
        return "not measured"
    seen = f" ({s['measured']} of {s['of']} timed)" if s["measured"] != s["of"] else ""
    return f"{s['geomean']:.3f} / {s['worst']:.3f}{seen}"
