"""The `scaling` and `dask` steps: the full matmul keys under a time budget on one GPU and on every GPU,
and by tune's own workers vs a local Dask cluster; their verdicts."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from bench import Bench

if TYPE_CHECKING:
    from table import Table


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


def verdicts(r: dict[str, Any], t: Table) -> None:
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
