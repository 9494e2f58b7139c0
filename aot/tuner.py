"""The offline tuner: for every case of every family, measure configs, check them, keep the winner.

Each config's output is checked against the family's reference on fresh random inputs before it may win;
one that fails to compile, run or match is recorded as rejected with its reason. `Tuner` tunes one case;
`TuneRun` (tune_run.py) walks a run's cases, in one process or in Dask's tasks; what differs per kind of
kernel is in kinds.py. Results are written after every case (atomically), so an interrupted run leaves a
valid file and `resume` skips finished keys.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from tuned_kernels.aot.corpus import Case, KernelFamily
from tuned_kernels.aot.heuristics import seeds_for
from tuned_kernels.aot.kinds import kind_of, longest_first
from tuned_kernels.aot.progress import ProgressEvent
from tuned_kernels.aot.tune_report import TuneOptions, TuneTimes
from tuned_kernels.aot.work import (
    CHECK_SEED_OFFSET,
    NoValidConfig,
    Probed,
    WorkItem,
    artifacts_apply,
    first_line,
    mismatch,
    slot_of,
)

from tuned_kernels import model, search
from tuned_kernels.decision import KEPT_TIMINGS
from tuned_kernels.triton_edge.benchmarker import Benchmarker, windowed
from tuned_kernels.triton_edge.compile import artifact_of, is_compiled_kernel, resident_of, warmup
from tuned_kernels.triton_edge.keys import config_from_triton, kernel_identity
from tuned_kernels.triton_edge.launch import LaunchesAnother, config_space, forced_config, probe_key
from tuned_kernels.triton_edge.measuring import submit_compiles

OnConfig = Callable[[int, int, "str | None", "float | None"], None]
Compiling = Mapping[model.Config, "Future[None]"]  # each config of a key's space, compiling in the background


class Tuner:
    def __init__(
        self,
        target: model.Target,
        device: Any,
        benchmarker: Benchmarker,
        options: TuneOptions,
        seeds_from: Sequence[model.Entry] = (),
        on_progress: Callable[[ProgressEvent], None] = lambda _: None,
        blobs: dict[str, bytes] | None = None,
    ) -> None:
        self.target = target
        self.device = device
        self.benchmarker = benchmarker
        self.options = options
        self.seeds_from = seeds_from
        self.on_progress = on_progress
        self.blobs = blobs if blobs is not None else {}  # artifact file contents, shared with the writer
        self.times = TuneTimes()

    def key_of(self, item: WorkItem) -> Probed:
        inputs = item.family.make_inputs(item.case, self.device, self.generator(0))
        key, named = probe_key(item.family.kernel, lambda: item.family.run(inputs))
        return key, named, inputs

    def slot_on_meta(self, item: WorkItem) -> model.EntrySlot | None:
        """`slot_on_meta(item)`, with this tune's generator."""
        return slot_on_meta(item, self.generator(0))

    def tune_case(
        self,
        item: WorkItem,
        probed: Probed,
        on_config: OnConfig = lambda *_: None,
        compiling: Compiling | None = None,
    ) -> model.Entry:
        """Measures and checks `item`'s configs; `on_config` hears (configs done, configs in the space, best
        so far described, its time) after each one. Configs still `compiling` are measured as their compiles
        finish, the first while the others still compile."""
        family, kernel = item.family, item.family.kernel
        key, named, bench_inputs = probed
        check_inputs = family.make_inputs(item.case, self.device, self.generator(CHECK_SEED_OFFSET))
        reference = family.reference(check_inputs)
        space = {config_from_triton(c): c for c in config_space(kernel, named)}
        benchmarker = kind_of(kernel).benchmarker(self.benchmarker)
        rejected: list[model.Rejection] = []
        progress: dict[str, Any] = {"done": 0, "best": None, "best_ms": None}
        on_config(0, len(space), None, None)

        def measure(config: model.Config) -> float | None:
            time_ms = check_and_time(config)
            progress["done"] += 1
            if time_ms is not None and (progress["best_ms"] is None or time_ms < progress["best_ms"]):
                progress.update(best=config, best_ms=time_ms)
            best = progress["best"].describe() if progress["best"] is not None else None
            on_config(progress["done"], len(space), best, progress["best_ms"])
            return time_ms

        def check_and_time(config: model.Config) -> float | None:
            reason = None
            with forced_config(kernel, space[config]):
                try:
                    out = family.run(check_inputs)
                    reason = mismatch(out, reference, family.tolerance)
                    if reason is None:
                        return timed(self.times, lambda: benchmarker(lambda: family.run(bench_inputs)))
                except Exception as exc:  # a config that fails to compile or run must not stop the tune
                    reason = f"failed: {type(exc).__name__}: {first_line(exc)}"
            rejected.append(model.Rejection(config, reason))
            return None

        def time_again(config: model.Config) -> float | None:
            with forced_config(kernel, space[config]):
                return timed(self.times, lambda: benchmarker(lambda: family.run(bench_inputs)))

        measured, found_by = searched(self, family, item.case, key, list(space), measure, compiling or {})
        rounds = search.FINAL_ROUNDS if windowed(self.benchmarker) else 0
        measured, best = search.decided(measured, list(space), time_again, rounds)
        ranked = sorted((t, repr(c), c) for c, t in measured.items() if t is not None)
        if not ranked:
            raise NoValidConfig(
                f"{family.name} {item.case.id}: every config was rejected "
                f"({'; '.join(r.reason for r in rejected[:3])})"
            )
        assert best is not None  # `ranked` holds a measured config
        keep = [c for _, _, c in ranked] if self.options.artifacts == "all" else [best]
        kept_timings = ranked[:KEPT_TIMINGS] + [r for r in ranked[KEPT_TIMINGS:] if r[2] == best]
        return model.Entry(
            kernel=kernel_identity(kernel),
            key=key,
            best=best,
            timings=_timings(self.target, kernel, named, kept_timings),
            rejected=tuple(sorted(rejected, key=lambda r: repr(r.config))),  # not in compile-finish order
            found_by=found_by,
            configs_benchmarked=len(measured),
            artifacts=self._artifacts(kernel, named, keep),
        )

    def _artifacts(
        self, kernel: Any, named: dict[str, Any], configs: Sequence[model.Config]
    ) -> tuple[model.Artifact, ...]:
        """The compiled kernels of `configs` (already compiled while measuring: Triton's caches answer)."""
        if (
            self.options.artifacts == "none"
            or not artifacts_apply(self.target)
            or not is_compiled_kernel(kernel)
        ):
            return ()
        found = []
        for config in configs:
            artifact, blobs = artifact_of(warmup(kernel, named, config), config)
            self.blobs.update(blobs)
            found.append(artifact)
        return tuple(found)

    def start_compiling(self, pool: ThreadPoolExecutor, kernel: Any, named: dict[str, Any]) -> Compiling:
        """Compiles every config of the space on `pool` in the background (the measuring engine a miss uses
        too), so a key's space compiles while the key before it is measured. Failures are left for
        `measure` to record."""
        if self.options.jobs <= 1 or self.target.arch == "cpu":
            return {}
        t0 = time.monotonic()  # counted apart, as queueing
        # pruned here, on the calling thread: pruning uses the autotuner's own state
        space = [config_from_triton(c) for c in config_space(kernel, named)]
        compiling = dict(zip(space, submit_compiles(pool, kernel, named, space), strict=False))
        self.times.queue += time.monotonic() - t0
        return compiling

    def compiled_first(self, configs: Sequence[model.Config], compiling: Compiling) -> Iterator[model.Config]:
        """`configs` in the order they become ready to measure: those not compiling here at once, then the
        others as their compiles finish (in `configs`' order among those finishing together); the time spent
        waiting counts as compiling."""
        pending = {compiling[c]: c for c in configs if c in compiling}
        yield from (c for c in configs if c not in compiling)
        while pending:
            t0 = time.monotonic()
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            self.times.compile += time.monotonic() - t0
            for config in [c for c in configs if compiling.get(c) in finished]:
                del pending[compiling[config]]
                yield config

    def generator(self, offset: int) -> Any:
        """A torch generator seeded for this tune's inputs, `offset` apart."""
        import torch

        return torch.Generator().manual_seed(self.options.seed + offset)


def timed(times: TuneTimes, timing: Callable[[], float]) -> float:
    """`timing()`, its seconds counted as benchmarking."""
    t0 = time.monotonic()
    try:
        return timing()
    finally:
        times.benchmark += time.monotonic() - t0


def slot_on_meta(item: WorkItem, generator: Any = None) -> model.EntrySlot | None:
    """The item's slot probed with inputs on torch's `meta` device (shapes, no data); None when the family
    cannot make its inputs there; raises `LaunchesAnother` as a real probe would."""
    if generator is None:
        import torch

        generator = torch.Generator().manual_seed(0)
    try:
        inputs = item.family.make_inputs(item.case, "meta", generator)
        key, named = probe_key(item.family.kernel, lambda: item.family.run(inputs))
    except LaunchesAnother:
        raise
    except Exception:  # a user corpus need not support meta inputs: the real probe decides
        return None
    return slot_of(item, (key, named, inputs))


def distinct_keys(items: Sequence[WorkItem]) -> list[int]:
    """The indices of `items` to tune: those whose key (probed on `meta`) no earlier item has. Cases of a
    family that differ only outside the kernel's key (rows of a row-wise kernel keyed on the row length)
    are one key to tune, which processes sharing a run's items would otherwise each tune."""
    kept, seen = [], set()
    for i, item in enumerate(items):
        try:
            slot = slot_on_meta(item)
        except LaunchesAnother:
            slot = None  # the real probe says so, once
        if slot is None or slot not in seen:
            seen.add(slot)
            kept.append(i)
    return kept


def tuning_order(items: Sequence[WorkItem]) -> list[int]:
    """The indices of `items` (a shard's items in the corpus's order, alike in every process) in the order
    to tune them: the longest first, one case per key. Found once, by the process that shares a run out,
    and sent as indices: a kernel's config list may depend on the GPU it was imported on."""
    order = longest_first(items)
    return [order[i] for i in distinct_keys([items[j] for j in order])]


def searched(
    tuner: Tuner,
    family: KernelFamily,
    case: Case,
    key: model.TuningKey,
    space: list[model.Config],
    measure: Callable[[model.Config], float | None],
    compiling: Compiling,
) -> tuple[dict[model.Config, float | None], model.FoundBy]:
    """The configs of `space` measured by the tune's strategy: every one (in the order their compiles
    finish), or seeded (the winners of nearby keys and the family's heuristic seeds first, stopping early,
    once every compile finished)."""
    if tuner.options.strategy == "seeded":
        list(tuner.compiled_first(space, compiling))
        name = kernel_identity(family.kernel).name
        earlier = [e for e in tuner.seeds_from if e.kernel.name == name]
        seeds = seeds_for(tuner.target, family.name, case, key, space, earlier)
        return search.seeded(space, seeds, measure), model.FoundBy.SEEDED
    return search.exhaustive(tuner.compiled_first(space, compiling), measure), model.FoundBy.EXHAUSTIVE


def _timings(
    target: model.Target,
    kernel: Any,
    named: dict[str, Any],
    ranked: Sequence[tuple[float, str, model.Config]],
) -> tuple[model.Timing, ...]:
    """The kept (time, _, config)s, each with how many programs of its compiled kernel a multiprocessor
    held (a GPU's compiled kernels only): what a prediction for another key weighs its waves by."""
    resident = resident_of(kernel, named, (c for _, _, c in ranked)) if target.arch != "cpu" else {}
    return tuple(model.Timing(c, t, resident.get(c, 0)) for t, _, c in ranked)
