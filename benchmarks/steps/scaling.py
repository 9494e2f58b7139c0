"""The `speedup` step: one fixed set of full keys tuned to the end on 1, 2 and 4 GPUs of one machine, by
tune's own workers and by a local Dask cluster (wall time with start-up, each GPU's time split, the
winners); and the earlier `scaling` and `dask` steps (keys reached under a time budget). Their verdicts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import Bench

if TYPE_CHECKING:
    from table import Table


SPEEDUP_CORPUS = str(Path(__file__).parent.parent / "speedup_corpus.py")
GOALS = {2: 1.8, 4: 3.6}  # speed-up over one GPU
BUSY_GOAL = 0.90  # each GPU's measuring over its time after start-up


def speedup(bench: Bench, runs: Sequence[str], corpus: str = SPEEDUP_CORPUS) -> None:
    """`runs` (`1`, `2`, `2d`, `4`, `4d`: GPUs, `d` through `--dask local`) of the full keys of `corpus`
    with no budget, each in fresh caches on the first GPUs of the machine; rows saved as each finishes."""
    rows = bench.report.setdefault("speedup", {})
    for run in runs:
        gpus, dask = int(run.rstrip("d")), run.endswith("d")
        output = bench.work / f"speedup-{run}.pb"
        argv = ["tune", "--shapes", "full", "--corpus", corpus, "-o", str(output), "--json"]
        argv += ["--dask", "local"] if dask else []
        env = bench.env(CUDA_VISIBLE_DEVICES=",".join(map(str, range(gpus))))
        wall, text = bench.tool(argv, env)
        label = f"{gpus} GPU{'s' if gpus > 1 else ''}, {'Dask' if dask else 'tune'}"
        rows[label] = {
            **json.loads(text), "gpus": gpus, "via": "dask" if dask else "tune", "wall_s": wall,
            "corpus": Path(corpus).name, "winners": winners(output),
        }  # fmt: skip
        bench.save()
        print(f"{label}: {rows[label]['tuned']} keys in {wall:.1f} s", flush=True)


def winners(path: Path) -> dict[str, dict[str, Any]]:
    """Each key's winner in a results file, with the times of the configs it timed best."""
    from tuned_kernels.results import read_results

    return {
        f"{e.kernel.name} {e.key}": {
            "best": e.best.describe(),
            "ms": e.best_time_ms,
            "timings": {t.config.describe(): t.time_ms for t in e.timings},
        }
        for e in read_results(path).entries
    }


def run(bench: Bench, budget_s: float) -> None:
    """The full matmul keys, tuned for `budget_s` on one GPU, then on every GPU: keys per second, and the
    merged report's figures (every participant's)."""
    import torch

    gpus = torch.cuda.device_count()
    rows = {}
    for label, visible in (("1 GPU", "0"), (f"{gpus} GPUs", ",".join(map(str, range(gpus))))):
        argv = ["tune", "--shapes", "full", "--kernels", "matmul", "--kernels", "matmul_skinny"]
        argv += ["--kernels", "matmul_tma"]
        argv += ["--time-budget", str(budget_s)]
        output = str(bench.work / f"s{len(rows)}.pb")
        wall, text = bench.tool([*argv, "-o", output, "--json"], bench.env(CUDA_VISIBLE_DEVICES=visible))
        rows[label] = {"wall_s": wall, "budget_s": budget_s, **json.loads(text)}
    bench.report["scaling"] = rows


def dask(bench: Bench, budget_s: float, kernels: Sequence[str]) -> None:
    """The full keys of `kernels` for `budget_s` on every visible GPU, by tune's own workers and by a local
    Dask cluster: keys per second of each (a budget both runs finish within compares the same keys)."""
    rows = {}
    for label, extra in (("tune's workers", []), ("Dask", ["--dask", "local"])):
        argv = ["tune", "--shapes", "full", *(a for k in kernels for a in ("--kernels", k))]
        argv += ["--time-budget", str(budget_s), *extra]
        output = str(bench.work / f"d{len(rows)}.pb")
        wall, text = bench.tool([*argv, "-o", output, "--json"], bench.env())
        rows[label] = {"wall_s": wall, "budget_s": budget_s, "kernels": list(kernels), **json.loads(text)}
    bench.report["dask"] = rows


def speedup_verdicts(rows: dict[str, Any], t: Table) -> None:
    """Per multi-GPU row: the speed-up over the one-GPU row (start-up included), each GPU's busy share,
    and its winners against the one-GPU run's."""
    ones = [row for row in rows.values() if row["gpus"] == 1]
    if not ones:  # a file of multi-GPU runs alone: Dask against tune on its host (the speed-ups come
        _dask_against_tune(rows, t)  # from it merged with the 1-GPU run's)
        return
    one = ones[0]
    keys = len(one["winners"])
    for label, row in rows.items():
        if row["gpus"] == 1:
            continue
        n, goal = row["gpus"], GOALS.get(row["gpus"], 0.9 * row["gpus"])
        ratio = one["wall_s"] / row["wall_s"]
        complete = row["tuned"] == one["tuned"] == keys and not row["failed"] and not one["failed"]
        t.row(
            "speedup",
            f"{keys} full keys ({', '.join(row['per_family'])}) tuned to the end: {label} vs 1 GPU, "
            "wall time with start-up",
            f"{row['wall_s']:.1f} s vs {one['wall_s']:.1f} s: **{ratio:.2f}x** "
            f"({row['tuned']} of {keys} keys)",
            f"≥ {goal}x, every key",
            ratio >= goal and complete,
        )
        split = row["time_split"]
        busy = min(g["busy"] for g in split)
        shares = ", ".join(
            f"{g['gpu']} {g['busy']:.0%} (start {g['startup']:.1f} s, compiling {g['compiling']:.1f}, "
            f"waiting {g['waiting']:.1f})"
            for g in split
        )
        t.row("speedup", f"{label}: each GPU measuring, share of its time after start-up", shares,
              f"≥ {BUSY_GOAL:.0%} each", busy >= BUSY_GOAL and len(split) == n)  # fmt: skip
        same, off = _winners_against(one["winners"], row["winners"])
        close = sum(1 for ratio in off.values() if ratio <= 1.02)
        unseen = sum(1 for ratio in off.values() if ratio == float("inf"))
        far = sorted(
            (ratio, one["winners"][key]["ms"]) for key, ratio in off.items() if 1.02 < ratio < float("inf")
        )
        beyond = "".join(
            f"; {(ratio - 1) * 100:.1f} % slower on a key of {ms:.2f} ms" for ratio, ms in far
        )  # fmt: skip
        t.row(
            "speedup",
            f"{label}: winners against the 1-GPU run's",
            f"the same on {same} of {keys} keys ({same / max(keys, 1):.0%}); of the other {len(off)}, "
            f"{close} within 2 % by the 1-GPU run's times, {unseen} not among the times it kept{beyond}",
            "≥ 95 % the same, the rest within 2 %",
            same >= 0.95 * keys and close == len(off),
        )


def _dask_against_tune(rows: dict[str, Any], t: Table) -> None:
    """Per `--dask local` run with a tune run of as many GPUs beside it: its wall time against tune's, and
    where its GPUs' time went against theirs; every other run, its wall time and that this file holds
    nothing to weigh it against."""
    tunes = {row["gpus"]: row for row in rows.values() if row.get("via") == "tune"}
    dasks = {row["gpus"] for row in rows.values() if row.get("via") == "dask"}
    for label, row in rows.items():
        tune = tunes.get(row["gpus"]) if row.get("via") == "dask" else None
        if tune is None:
            if not (row.get("via") == "tune" and row["gpus"] in dasks):  # (that one is weighed below)
                t.row(
                    "speedup",
                    f"{label}: wall time with start-up",
                    f"{row['wall_s']:.1f} s ({row['tuned']} keys); no 1-GPU run in this file to weigh it "
                    "against: merge it with the file that has one (--table-from FILE FILE)",
                    f"≥ {GOALS.get(row['gpus'], 0.9 * row['gpus'])}x a 1-GPU run of the same host",
                    None,
                )
            continue
        measured, compiling = (
            [sum(g[part] for g in r["time_split"]) for r in (row, tune)]
            for part in ("measuring", "compiling")
        )
        starts = [max(g["startup"] for g in r["time_split"]) for r in (row, tune)]
        t.row(
            "speedup",
            f"{label} against {row['gpus']} GPUs, tune, on the same host: wall time with start-up",
            f"{row['wall_s']:.1f} s vs {tune['wall_s']:.1f} s: **{row['wall_s'] / tune['wall_s']:.2f}x**; "
            f"measuring {measured[0]:.1f} s vs {measured[1]:.1f} s in all, waiting for compiles "
            f"{compiling[0]:.1f} s vs {compiling[1]:.1f} s, last GPU's first key {starts[0]:.1f} s vs "
            f"{starts[1]:.1f} s in",
            "the same speed",
            None,
        )


def _winners_against(
    base: dict[str, dict[str, Any]], other: dict[str, dict[str, Any]]
) -> tuple[int, dict[str, float]]:
    """Keys whose winner is the base run's, and for each other key the time of its winner over the base
    winner's, both as the base run timed them (infinite where the base run kept no time for it)."""
    same, off = 0, {}
    for key, won in base.items():
        theirs = other.get(key)
        if theirs is None:
            off[key] = float("inf")
        elif theirs["best"] == won["best"]:
            same += 1
        else:
            off[key] = won["timings"].get(theirs["best"], float("inf")) / won["ms"]
    return same, off


def verdicts(r: dict[str, Any], t: Table) -> None:
    if "speedup" in r:
        speedup_verdicts(r["speedup"], t)
    if "scaling" in r:
        (one, w1), (many, w2) = list(r["scaling"].items())
        if "budget_s" in w1:
            per_key = (w2["seconds"] / w2["tuned"]) / (w1["seconds"] / w1["tuned"])
            t.row(
                "scaling",
                f"full matmul keys under a time budget: time per key, {many} over {one}",
                f"{w2['tuned']} keys in {w2['seconds']:.0f} s vs {w1['tuned']} in {w1['seconds']:.0f} s: "
                f"{per_key:.2f}x",
                f"≤ {1 / 1.8:.3f}x",  # 1.8x the keys per second
                per_key <= 1 / 1.8,
            )
            t.row(
                "scaling",
                f"merged report of {many}: compile s / benchmark s / compiled kernels, bytes",
                f"{w2['compile_seconds']:.1f} / {w2['benchmark_seconds']:.1f} / {w2['artifacts']}, "
                f"{w2['artifact_bytes']}",
                "every participant counted (non-zero)",
                w2["benchmark_seconds"] > 0 and (w2["artifacts"] == 0 or w2["artifact_bytes"] > 0),
            )
        else:  # the earlier measurement: one fixed workload, wall time
            ratio = w2["wall_s"] / w1["wall_s"]
            t.row(
                "scaling",
                f"tune on {many} over {one} (the 8-key workload, wall time)",
                f"{ratio:.2f}x",
                f"≤ {1 / 1.7:.3f}x",
                ratio <= 1 / 1.7,
            )
    if "dask" in r:
        (_, own), (_, dask) = list(r["dask"].items())
        own_key, dask_key = own["seconds"] / own["tuned"], dask["seconds"] / dask["tuned"]  # s a key
        same = (
            own["per_family"] == dask["per_family"] and not own["stopped_early"] and not dask["stopped_early"]
        )
        keys = ", ".join(own.get("kernels", ["matmul", "matmul_skinny", "matmul_tma"]))
        what = f"the same {own['tuned']} keys, all of them" if same else "keys reached within the budget"
        t.row(
            "dask",
            f"full {keys} keys under a {own['budget_s']:.0f} s budget ({what}): time per key, Dask over "
            "tune's workers",
            f"{dask['tuned']} keys in {dask['seconds']:.0f} s vs {own['tuned']} in {own['seconds']:.0f} s: "
            f"{dask_key / own_key:.2f}x; Dask's cost {dask_key - own_key:+.2f} s a key "
            f"(its start-up {dask.get('startup_seconds', 0):.1f} s; without it "
            f"{(dask['seconds'] - dask.get('startup_seconds', 0)) / dask['tuned'] / own_key:.2f}x)",
            f"≤ {1 / 0.95:.3f}x",  # 0.95x the keys per second
            dask_key / own_key <= 1 / 0.95,
        )
