"""A program with two Helion kernels, run on the CPU through Triton's interpreter by the Helion tests.

Helion's own searches time configs on a GPU (`do_bench`), so on the CPU the program registers a small search
of its own, `WallClockSearch`: Helion's default config and three random ones from the kernel's config space
whose tiles are at least 16 wide, each run and timed by the wall clock, the fastest kept. (A narrower tile
runs hundreds of program instances through the interpreter: up to 3 s a config, where a wide one takes
0.05 s.) Helion wraps it in the autotune cache as it wraps its own searches. The program prints one JSON
line: each kernel's config, whether its results are right, how many searches ran and what
`tuned_kernels.stats()` says.

    python helion_program.py [--cache NAME]   # NAME: the autotune cache the kernels ask for
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import time
from typing import Any

import helion
import helion.language as hl
import torch
from helion.autotuner import search_algorithms
from helion.autotuner.base_cache import AutotuneCacheBase
from helion.autotuner.base_search import BaseSearch

MIN_TILE, RANDOM_DRAWS = 16, 64  # random configs tried: those whose tiles are this wide, of this many
SEARCHES: list[str] = []  # the kernels a search ran for in this process


class WallClockSearch(BaseSearch):
    def _autotune(self) -> Any:
        generation = self.config_spec.create_config_generation()
        drawn = (generation.random_config() for _ in range(RANDOM_DRAWS))
        wide = (config for config in drawn if min(config.config.get("block_sizes") or [MIN_TILE]) >= MIN_TILE)
        candidates = [self.config_spec.default_config(), *itertools.islice(wide, 3)]
        best, best_s = None, float("inf")
        for config in candidates:
            try:
                run = self.kernel.compile_config(config, allow_print=False)
                run(*self.args)
                start = time.perf_counter()
                run(*self.args)
                seconds = time.perf_counter() - start
            except Exception:
                continue
            self._autotune_metrics.num_configs_tested += 1
            if seconds < best_s:
                best, best_s = config, seconds
        self.best_perf_so_far = best_s * 1000
        SEARCHES.append(self.kernel.kernel.name)
        assert best is not None
        return best


class ProgramsOwnCache(AutotuneCacheBase):
    """A cache a program brings itself: remembers nothing."""

    def get(self) -> Any:
        return None

    def put(self, config: Any) -> None:
        pass

    def _get_cache_key(self) -> Any:
        return None

    def _list_cache_entries(self) -> list[Any]:
        return []


search_algorithms["WallClockSearch"] = WallClockSearch
CACHE = sys.argv[sys.argv.index("--cache") + 1] if "--cache" in sys.argv else None
if CACHE == "ProgramsOwnCache":
    import helion.autotuner

    helion.autotuner.cache_classes["ProgramsOwnCache"] = ProgramsOwnCache
SETTINGS: dict[str, Any] = {"autotune_cache": CACHE} if CACHE else {}


@helion.kernel(**SETTINGS)
def add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(x)
    for tile in hl.tile(x.size()):
        out[tile] = x[tile] + y[tile]
    return out


@helion.kernel(**SETTINGS)
def row_sum(x: torch.Tensor) -> torch.Tensor:
    m, _ = x.size()
    out = torch.empty([m], dtype=x.dtype, device=x.device)
    for tile_m in hl.tile(m):
        out[tile_m] = x[tile_m, :].sum(-1)
    return out


def main() -> None:
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(64, 32, generator=generator)
    y = torch.randn(64, 32, generator=generator)
    right = {
        "add": bool(torch.allclose(add(x, y), x + y)),
        "row_sum": bool(torch.allclose(row_sum(x), x.sum(-1), atol=1e-5)),
    }
    configs = {name: dict(kernel.bind(args)._config.config) for name, kernel, args in
               (("add", add, (x, y)), ("row_sum", row_sum, (x,)))}  # fmt: skip
    report: dict[str, Any] = {"right": right, "configs": configs, "searches": SEARCHES}
    if os.environ.get("TUNED_KERNELS") == "1" or os.environ.get("TUNED_KERNELS_CAPTURE"):
        import tuned_kernels

        stats = tuned_kernels.stats()
        keys = ("hits", "misses", "misses_by_reason", "configs_benchmarked", "stepped_aside", "problems")
        report["stats"] = {k: stats[k] for k in keys}
    print(json.dumps(report))


if __name__ == "__main__":
    main()
