"""Persisted tuning for test suites (registered as a pytest11 plugin).

    pytest --tuned-kernels-load FILE   tests use FILE (results or bundle; repeatable) for their kernels, and
                                       the run ends with one line: hits, misses, the kernels that missed
    pytest --tuned-kernels-dump FILE   every tuning decision the tests make is written to FILE

On a machine with no GPU the tests' kernels run through Triton's interpreter (the cpu target), as everywhere
in tuned-kernels: the switch is made before the first conftest is imported.

Dumping works under pytest-xdist: each worker captures into its own part, and the controller merges the
parts into FILE when the run ends. Worker statistics travel back through xdist's `workeroutput`.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

_STATS_KEY = "tuned_kernels_stats"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("tuned-kernels")
    group.addoption(
        "--tuned-kernels-load",
        action="append",
        default=[],
        metavar="FILE",
        help="serve the tests' autotuned kernels from this results file or bundle (repeatable)",
    )
    group.addoption(
        "--tuned-kernels-dump",
        default=None,
        metavar="FILE",
        help="write every tuning decision the tests make into this results file (merged across xdist workers)",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Before any conftest or test module defines a kernel (Triton decides at definition)."""
    options = early_config.known_args_namespace
    if getattr(options, "tuned_kernels_load", None) or getattr(options, "tuned_kernels_dump", None):
        from tuned_kernels.hardware.probe import interpret_without_gpu

        interpret_without_gpu()


def _parts_dir(dump: str) -> Path:
    return Path(dump + ".parts")


def _worker_id(config: pytest.Config) -> str | None:
    workerinput = getattr(config, "workerinput", None)
    return str(workerinput["workerid"]) if workerinput else None


def pytest_configure(config: pytest.Config) -> None:
    load: list[str] = config.getoption("--tuned-kernels-load")
    dump: str | None = config.getoption("--tuned-kernels-dump")
    if not load and not dump:
        return
    if load:
        held = [p for p in os.environ.get("TUNED_KERNELS_PATH", "").split(os.pathsep) if p]
        paths = [str(Path(p).resolve()) for p in load]  # xdist workers inherit the controller's setting
        os.environ["TUNED_KERNELS_PATH"] = os.pathsep.join([p for p in paths if p not in held] + held)
    if dump:
        parts = _parts_dir(str(Path(dump).resolve()))
        worker = _worker_id(config)
        if worker is None:  # the controller (or a run without xdist) starts from no parts
            shutil.rmtree(parts, ignore_errors=True)
        parts.mkdir(parents=True, exist_ok=True)
        os.environ["TUNED_KERNELS_CAPTURE"] = str(parts / f"{worker or 'main'}.pb")
    import tuned_kernels

    tuned_kernels.enable()


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if not (config.getoption("--tuned-kernels-load") or config.getoption("--tuned-kernels-dump")):
        return
    stats = _own_stats()
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the numbers to the controller
        workeroutput[_STATS_KEY] = json.dumps(stats)
        return
    config._tuned_kernels_stats = [stats, *getattr(config, "_tuned_kernels_workers", [])]  # type: ignore[attr-defined]
    dump = config.getoption("--tuned-kernels-dump")
    if dump:
        config._tuned_kernels_dumped = _merge_parts(str(Path(dump).resolve()))  # type: ignore[attr-defined]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:  # xdist, on the controller
    text = getattr(node, "workeroutput", {}).get(_STATS_KEY)
    if text:
        workers = getattr(node.config, "_tuned_kernels_workers", [])
        workers.append(json.loads(text))
        node.config._tuned_kernels_workers = workers


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    all_stats: list[dict[str, Any]] = getattr(config, "_tuned_kernels_stats", [])
    if not all_stats:
        return
    hits = sum(s["hits"] + s["nearest"] for s in all_stats)
    misses = sum(s["misses"] for s in all_stats)
    predicted = sum(s.get("predicted", 0) for s in all_stats)
    line = (
        f"tuned-kernels: {hits} hits, "
        + (f"{predicted} predicted, " if predicted else "")
        + f"{misses} misses"
    )
    for kind in ("predicted", "missed"):
        counts: dict[str, int] = {}
        for s in all_stats:
            for kernel, n in s.get(f"{kind}_kernels", {}).items():
                counts[kernel] = counts.get(kernel, 0) + n
        if counts:
            line += f" ({kind}: " + ", ".join(f"{k} x{n}" for k, n in sorted(counts.items())) + ")"
    dump = config.getoption("--tuned-kernels-dump")
    if dump:
        line += f"; {getattr(config, '_tuned_kernels_dumped', 0)} decisions -> {dump}"
    terminalreporter.write_line(line)


def _own_stats() -> dict[str, Any]:
    from tuned_kernels.registry import Registry, installed_registry

    s = (installed_registry() or Registry()).stats
    return {
        "hits": s.hits,
        "nearest": s.nearest,
        "predicted": s.predicted,
        "misses": s.misses,
        "missed_kernels": dict(s.missed_kernels),
        "predicted_kernels": dict(s.predicted_kernels),
    }


def _merge_parts(dump: str) -> int:
    """Joins the workers' parts into `dump` (decisions made by several workers: the faster entry wins)."""
    from tuned_kernels import model
    from tuned_kernels.registry import Registry, installed_registry
    from tuned_kernels.results import read_results, write_results
    from tuned_kernels.results.merge import join

    parts_dir = _parts_dir(dump)
    parts = [read_results(p) for p in sorted(parts_dir.glob("*.pb"))]
    header = (
        parts[0].header
        if parts
        else (installed_registry() or Registry()).load().header(model.Producer.CAPTURE)
    )
    merged = join(header, parts)
    write_results(dump, merged)
    shutil.rmtree(parts_dir, ignore_errors=True)
    return len(merged.entries)
