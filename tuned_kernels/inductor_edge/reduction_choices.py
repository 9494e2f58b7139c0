"""The one choice Inductor makes at every first launch that no cache of its keeps: a reduction kernel
generated with a single config gets a copy of that config with its reduction block halved, where the GPU's
registers would hold few of its blocks at once (`_dynamic_scale_rblock`), and the two are timed (2 GPU
benchmarks at each first call, a warm machine's too: H200, torch 2.11). A kernel found in the autotune cache
gets the same copy of its stored config; where the copy wins by timing noise, coordinate descent runs again
from it and is written over the stored file.

Capture records which of the two won, by the kernel's generated module (named by its source's hash). Served:
a kernel found in the autotune cache runs its stored config alone (it won against such copies when it was
tuned); a single-config kernel whose choice a bundle holds runs the one that won (the copy made only where
it won); any other kernel is scaled and timed as Inductor does.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from tuned_kernels import model
from tuned_kernels.inductor_edge.autotune_cache import (
    capturing_cache_dir,
    kwargs_of,
    launch_of,
    plausible_block,
    plausible_count,
)
from tuned_kernels.inductor_edge.keys import PREFIX, torch_source_hash
from tuned_kernels.whole_match import matches, whole

NAME = f"{PREFIX}reduction_choice"
CHOICES = "tuned-kernels-reduction-choices"  # in a capture's cache directory: a JSON line per choice made
MAX_CHOICES_BYTES = 4 << 20
MODULE = whole(r"[a-z0-9_]{20,80}")
HIT, ONE_CONFIG = "hit", "only 1 config"  # Inductor's autotune-cache states
Launch = tuple[Any, ...]  # block sizes, warps and stages, as Inductor compares configs

_chosen: dict[str, Launch] = {}  # the bundles' choices by kernel module
_serving = [False]  # between `serve` and `stop`: the patches act only then
_run_as_chosen = [0]  # single-config kernels that ran the bundle's choice, timing nothing


def identity() -> model.KernelIdentity:
    return model.KernelIdentity(NAME, torch_source_hash())


def module_of(kernel: Any) -> str:
    return Path(str(getattr(kernel, "filename", "") or "")).stem


def state_of(kernel: Any) -> str | None:
    info = getattr(kernel, "autotune_cache_info", None)
    return info.get("autotune_cache_state") if isinstance(info, dict) else None


def choice_of(module: object, config: Any) -> dict[str, Any]:
    """A choice as capture writes it (a Triton config or a stored one)."""
    return {
        "module": module,
        "blocks": kwargs_of(config),
        "num_warps": config.num_warps,
        "num_stages": config.num_stages,
    }


def plausible(choice: Any) -> bool:
    """A choice Inductor could have made: block sizes that are powers of two, warps and stages in range."""
    if not isinstance(choice, dict) or not matches(MODULE, choice.get("module")):
        return False
    blocks = choice.get("blocks")
    return (
        isinstance(blocks, dict)
        and bool(blocks)
        and all(plausible_block(key, value) for key, value in blocks.items())
        and all(plausible_count(key, choice.get(key)) for key in ("num_warps", "num_stages"))
    )


def harvest(cache_dir: Path) -> list[model.Entry]:
    """An entry per kernel whose choice a capture recorded in `cache_dir` (the last recorded for each)."""
    try:
        with open(cache_dir / CHOICES, "rb") as f:
            lines = f.read(MAX_CHOICES_BYTES).decode(errors="replace").splitlines()
    except OSError:
        return []
    chosen = {}
    for line in lines:
        with contextlib.suppress(ValueError):
            choice = json.loads(line)
            if plausible(choice):
                launch = {"num_warps": choice["num_warps"], "num_stages": choice["num_stages"]}
                chosen[choice["module"]] = model.Config.of(choice["blocks"], **launch)
    return [
        model.Entry(identity(), (module,), config, found_by=model.FoundBy.CAPTURED)
        for module, config in sorted(chosen.items())
    ]


def serve(entries: Iterable[model.Entry]) -> None:
    """From now on a kernel found in the autotune cache runs alone, and the single-config kernels these
    entries name run the config that won at capture."""
    _chosen.clear()
    _serving[0] = True
    for entry in entries:
        choice = choice_of(entry.key[0] if len(entry.key) == 1 else None, entry.best)
        if plausible(choice):
            _chosen[str(choice["module"])] = launch_of(entry.best)


def also_named(module: str, was: str) -> None:
    """The kernel module `was`, its code moved to another GPU, is `module` now: the choice held for it, if
    any, holds for `module` too."""
    if was in _chosen:
        _chosen.setdefault(module, _chosen[was])


def stop() -> None:
    """Inductor halves and times as it does without tuned-kernels."""
    _chosen.clear()
    _serving[0] = False


def install() -> None:
    """Patches Inductor's halving of a reduction's block (served: the choices above) and its timing of a
    kernel's configs (in a capture: the choice recorded), where its autotuner is laid out as expected."""
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_RBLOCK_SCALING
    from tuned_kernels.internals import holds

    if not holds(INDUCTOR_RBLOCK_SCALING, CachingAutotuner):
        return
    scale: Callable[[Any], Any] = CachingAutotuner._dynamic_scale_rblock
    timed: Callable[..., Any] = CachingAutotuner.autotune_to_one_config
    if getattr(scale, "mended", False):
        return

    def scaled_as_chosen(self: Any) -> Any:
        state, chosen = state_of(self), _chosen.get(module_of(self))
        if _serving[0] and (state == HIT or (state == ONE_CONFIG and chosen == _first_launch(self))):
            _run_as_chosen[0] += state == ONE_CONFIG
            return None  # the one config it has runs alone
        result = scale(self)
        if _serving[0] and state == ONE_CONFIG and chosen is not None:
            _run_as_chosen[0] += _keep_only(self, chosen)
        return result

    def timed_and_recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = timed(self, *args, **kwargs)
        if state_of(self) == ONE_CONFIG and len(self.launchers) == 1:
            with contextlib.suppress(Exception):  # a choice not recorded is timed again where served
                record(module_of(self), self.launchers[0].config)
        return result

    scaled_as_chosen.mended = True  # type: ignore[attr-defined]
    CachingAutotuner._dynamic_scale_rblock = scaled_as_chosen  # type: ignore[method-assign]
    CachingAutotuner.autotune_to_one_config = timed_and_recorded  # type: ignore[method-assign]


def _keep_only(kernel: Any, chosen: Launch) -> bool:
    """The kernel's launcher and compiled config of the chosen launch alone, as Inductor's timing leaves
    them (the other's module released where Inductor has a way to). Whether it was among them."""
    winners = [launcher for launcher in kernel.launchers if launch_of(launcher.config) == chosen]
    if len(winners) != 1:
        return False  # not the configs the capture chose between: timed as Inductor does
    release = getattr(kernel, "_release_static_launchers_except", None)
    if callable(release):
        release(winners[0])
    kernel.launchers = winners
    compiled = [result for result in kernel.compile_results if launch_of(result.config) == chosen]
    kernel.compile_results = compiled if len(compiled) == 1 else kernel.compile_results
    return True


def run_as_chosen() -> int:
    """How many single-config kernels ran the bundle's choice in this process, timing nothing."""
    return _run_as_chosen[0]


def _first_launch(kernel: Any) -> Launch | None:
    results = getattr(kernel, "compile_results", None) or []
    return launch_of(results[0].config) if len(results) == 1 else None


def record(module: str, config: Any) -> None:
    """Inside a capture: the config that won for a single-config kernel, for the capture to ship."""
    cache_dir = capturing_cache_dir()
    choice = choice_of(module, config)
    if cache_dir is not None and plausible(choice):
        with open(cache_dir / CHOICES, "a") as choices:  # one short append a line: writers do not mix
            choices.write(json.dumps(choice) + "\n")
