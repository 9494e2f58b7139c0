"""Inductor's tuning of the kernels it generates (pointwise, reduction; with max-autotune, coordinate descent
on top) lands in its local autotune cache: one `<hash>.best_config` JSON file per kernel, beside the
generated module in Inductor's cache directory, named from the kernel's source and torch's build.

Capture harvests these files from the private cache directory it gives the program; serving writes a
bundle's into Inductor's cache directory wherever no file is (never over one), so Inductor finds its own
results there: no benchmarking and no coordinate descent. A stored file is untrusted: only the fields Inductor
writes, with values it could have chosen, are ever written back.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuned_kernels import model
from tuned_kernels.errors import warn
from tuned_kernels.inductor_edge.cache_files import place_new_file
from tuned_kernels.inductor_edge.keys import PREFIX, torch_source_hash
from tuned_kernels.whole_match import matches, whole

NAME = f"{PREFIX}best_config"
READS = "tuned-kernels-best-configs-read"  # in a capture's cache directory: the files read, a line each
CAPTURING_PREFIX = ".capturing-inductor-"  # the private cache directory `capture` gives the program
MAX_FILE_BYTES = 64 * 1024
RELATIVE_PATH = whole(r"[0-9a-z_]{2}/[0-9a-f]{64}\.best_config")
BLOCK = whole(r"([XYZR]|R\d_)BLOCK")
HEX_HASH = whole(r"[0-9a-f]{1,128}")
COUNTS = {"num_warps": (1, 64), "num_stages": (1, 16), "time_taken_ms": (0, 1 << 40)}
OPTIONAL: dict[str, tuple[type, ...]] = {
    "found_by_coordesc": (bool,),
    "triton_cache_hash": (str, type(None)),
    "num_consumer_groups": (int,),
    "num_buffers_warp_spec": (int,),
    "waves_per_eu": (int,),
    "matrix_instr_nonkdim": (int,),
    "kpack": (int,),
}


def identity() -> model.KernelIdentity:
    return model.KernelIdentity(NAME, torch_source_hash())


def plausible_block(key: str, value: Any) -> bool:
    """A block size Inductor could have chosen: a power of two."""
    return matches(BLOCK, key) and type(value) is int and 1 <= value <= 1 << 16 and value & (value - 1) == 0


def plausible_count(key: str, value: Any) -> bool:
    """Warps, stages or a time in the range Inductor writes them."""
    low, high = COUNTS[key]
    return type(value) is int and low <= value <= high


def is_plausible(data: Any) -> bool:
    """The fields Inductor writes, with values it could have chosen (block sizes powers of two)."""
    if not isinstance(data, dict) or not isinstance(data.get("configs_hash"), str):
        return False
    for key, value in data.items():
        if key == "configs_hash":
            ok = matches(HEX_HASH, value)
        elif matches(BLOCK, key):
            ok = plausible_block(key, value)
        elif key in COUNTS:
            ok = plausible_count(key, value)
        else:
            types = OPTIONAL.get(key, ())
            ok = isinstance(value, types) and not (bool not in types and isinstance(value, bool))
        if not ok:
            return False
    return "num_warps" in data and "num_stages" in data


def harvest(cache_dir: Path, only: set[str] | None = None) -> list[model.Entry]:
    """Entries for the plausible `.best_config` files under an Inductor cache directory (`only`: those of
    these relative paths)."""
    entries = []
    for path in sorted(cache_dir.glob("*/*.best_config")):
        relative = path.relative_to(cache_dir).as_posix()
        try:
            if only is not None and relative not in only:
                continue
            if not matches(RELATIVE_PATH, relative) or path.stat().st_size > MAX_FILE_BYTES:
                continue
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if is_plausible(data):
            best = model.Config.of(data)
            entries.append(model.Entry(identity(), (relative,), best, found_by=model.FoundBy.CAPTURED))
    return entries


@dataclass
class Installed:
    written: int = 0
    refused: list[str] = field(default_factory=list)  # why each entry left out was


def install(entries: Iterable[model.Entry], cache_dir: Path) -> Installed:
    """Writes the entries' files into `cache_dir` where none is: how many were written, and why each entry
    that is not a plausible `.best_config` at a name Inductor gives one was left out."""
    installed = Installed()
    for entry in entries:
        (relative,) = entry.key if len(entry.key) == 1 else (None,)
        data = dict(entry.best.kwargs)
        shown = str(relative)[:120]
        if not isinstance(relative, str) or not matches(RELATIVE_PATH, relative):
            installed.refused.append(f"{shown}: not a name Inductor gives a tuned config")
        elif not is_plausible(data):
            installed.refused.append(f"{shown}: not a config Inductor could have chosen")
        elif place_new_file(cache_dir / relative, json.dumps(data).encode()):
            installed.written += 1
    return installed


def inductor_cache_dir() -> Path:
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    return Path(cache_dir())


def mend_read_best() -> None:
    """Two things Inductor's `AutotuneCache.read_best` needs here, so that a served graph's kernels run their
    bundled configs at the first call, with no tuning and no compiling.

    The path: an FX-graph entry brings its kernels' autotuners along pickled (Inductor's statically
    launched kernels), and each holds the absolute path of its `.best_config` file: the capturing
    process's cache directory. Served elsewhere, that path does not exist, so Inductor would tune the
    kernel again at the first call (coordinate descent, compiling each config it tries) and write the
    result under the old path. A look-up whose path does not exist and lies outside this process's cache
    directory reads the same file name in this cache directory instead, where a bundle put it (and a save,
    `mend_save`, writes there).

    The flag: when coordinate descent kept one of the configs Inductor had compiled, torch up to 2.11
    narrows a cached graph's kernel to that compiled config but drops the "found by coordinate descent"
    mark (pytorch#172819), so the first call runs coordinate descent again and compiles the configs it
    tries. The configs read against are the compiled configs themselves: the one equal to a cached
    coordinate-descent winner is marked, as later torch does."""
    from torch._inductor.runtime.autotune_cache import AutotuneCache

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_AUTOTUNE_CACHE_READ
    from tuned_kernels.internals import holds

    read_best = AutotuneCache.read_best
    if getattr(read_best, "mended", False) or not holds(INDUCTOR_AUTOTUNE_CACHE_READ, AutotuneCache):
        return

    def mended_read_best(self: Any, inductor_meta: Any, configs: Any) -> Any:
        looked_up = relocate_local_cache(self, writing=False)
        best = read_best(self, inductor_meta, configs)
        if best is not None and looked_up is not None:
            record_read(looked_up, inductor_cache_dir())
        if best is not None and getattr(best, "found_by_coordesc", False):
            with contextlib.suppress(AttributeError, TypeError):  # configs of another shape: left as they are
                mark_found_by_coordesc(best, configs)
        return best

    mended_read_best.mended = True  # type: ignore[attr-defined]
    AutotuneCache.read_best = mended_read_best  # type: ignore[method-assign]
    mend_save(AutotuneCache)


def mend_save(autotune_cache: Any) -> None:
    """A kernel brought pickled with a graph saves what it tunes through the autotune cache it was compiled
    with (its `save_cache_hook`), not the one its look-up made: its path is the capturing process's cache
    directory, so a served kernel tuned again (a config the bundle lacks) would write there, making that
    folder on this machine. Where that folder is missing, such a save goes where the look-ups of this process
    and the next read it."""
    from tuned_kernels.inductor_edge.shapes import INDUCTOR_AUTOTUNE_CACHE_SAVE
    from tuned_kernels.internals import holds

    save = autotune_cache.save
    if getattr(save, "mended", False) or not holds(INDUCTOR_AUTOTUNE_CACHE_SAVE, autotune_cache):
        return

    @functools.wraps(save)
    def saved_here(self: Any, *args: Any, **kwargs: Any) -> Any:
        relocate_local_cache(self, writing=True)
        return save(self, *args, **kwargs)

    saved_here.mended = True  # type: ignore[attr-defined]
    autotune_cache.save = saved_here


OLD_RECHECK = "len(cached_configs) == 1 and len(configs) > 1"  # torch up to 2.11's guard


def mend_static_recheck() -> None:
    """A graph found in Inductor's cache brings its kernels compiled (`recheck_autotune_cache` then reads
    their `.best_config`). torch up to 2.11 acts on a stored config only for a kernel compiled with several:
    a kernel generated with one config (a persistent reduction: an RMSNorm's) whose coordinate-descent winner
    was another config keeps its untuned config, unmarked, and runs coordinate descent again at the first
    call (an H200 served run: 9 GPU benchmarks). Where the method still reads so, it acts as later torch
    does: the compiled config equal to the stored one is kept and marked, or else the stored one compiled."""
    import inspect

    from torch._inductor.runtime import triton_heuristics

    from tuned_kernels.inductor_edge.shapes import INDUCTOR_STATIC_RECHECK
    from tuned_kernels.internals import holds

    autotuner = triton_heuristics.CachingAutotuner
    original = getattr(autotuner, "recheck_autotune_cache", None)
    if original is None or getattr(original, "mended", False):
        return
    try:
        if OLD_RECHECK not in inspect.getsource(original):
            return  # this torch acts on a one-config kernel's stored config itself (or reads otherwise)
    except (OSError, TypeError):
        return
    if not holds(INDUCTOR_STATIC_RECHECK, autotuner):
        return

    @functools.wraps(original)
    def recheck_as_later_torch(self: Any, reload_kernel_from_src: Any) -> None:
        recheck_autotune_cache(self, reload_kernel_from_src, triton_heuristics)

    recheck_as_later_torch.mended = True  # type: ignore[attr-defined]
    autotuner.recheck_autotune_cache = recheck_as_later_torch  # type: ignore[method-assign]


def recheck_autotune_cache(kernel: Any, reload_kernel_from_src: Any, heuristics: Any) -> None:
    """`CachingAutotuner.recheck_autotune_cache` as torch after 2.11 has it: the stored config of a kernel
    loaded compiled is the one it runs, marked as coordinate descent's where it was, compiled here where
    none of the kernel's compiled configs equals it."""
    configs = [result.config for result in kernel.compile_results]
    cached, _, info = heuristics.check_autotune_cache(configs, kernel.filename, kernel.inductor_meta)
    kernel.autotune_cache_info = info
    if len(cached) != 1:
        return
    best = cached[0]
    wanted = heuristics.triton_config_to_hashable(best)
    for result in kernel.compile_results:
        if heuristics.triton_config_to_hashable(result.config) == wanted:
            result.config.found_by_coordesc = getattr(best, "found_by_coordesc", False)
            kernel.compile_results = [result]
            return
    try:
        if kernel.fn.fn is None:
            kernel.fn = reload_kernel_from_src().fn
        kernel.compile_results = [kernel._precompile_config(best)]
    except Exception as exc:  # a stored config that does not compile: the kernel tunes as without it
        with contextlib.suppress(Warning):  # a warning made an error (-W error): the program goes on
            warn(f"a stored config of {Path(str(kernel.filename)).name} does not compile "
                 f"({type(exc).__name__}); Inductor tunes that kernel as usual")  # fmt: skip


def capturing_into(cache_dir: Path) -> bool:
    """Whether this is `capture`'s program and `cache_dir` the private Inductor cache directory it was given
    (not pytest --tuned-kernels-dump's, which keeps the user's cache)."""
    return bool(os.environ.get("TUNED_KERNELS_CAPTURE")) and cache_dir.name.startswith(CAPTURING_PREFIX)


def capturing_cache_dir() -> Path | None:
    """Inside `capture`'s program: the private Inductor cache directory it was given; else None."""
    cache_dir = inductor_cache_dir()
    return cache_dir if capturing_into(cache_dir) else None


def record_read(path: str, cache_dir: Path) -> None:
    """Inside a capture: notes that the program's Inductor read the `.best_config` at `path` (a look-up
    that found it), for the capture to ship it (warm_start.py). Outside one, nothing."""
    if not capturing_into(cache_dir):
        return
    relative = f"{Path(path).parent.name}/{Path(path).name}"
    if matches(RELATIVE_PATH, relative) and Path(path).parent.parent.resolve() == cache_dir.resolve():
        with contextlib.suppress(OSError), open(cache_dir / READS, "a") as reads:
            reads.write(relative + "\n")  # one short append a line: processes writing at once do not mix


def keep_coordesc_mark_through_pickling() -> None:
    """A kernel's config keeps its "found by coordinate descent" mark when it is pickled or copied, so that
    a kernel compiled in one of Inductor's compile workers does not run coordinate descent again at its
    first launch in the program. The worker reads the `.best_config` and marks the winner; the autotuner
    comes back to the program pickled, and Triton's `Config.__setstate__` keeps only its own fields. Which
    kernels compile in a worker depends on whether Inductor's worker pool is up yet: one served process in
    two ran coordinate descent on one kernel (H200, torch 2.11), compiling the 7 configs it tried. Only a
    Triton whose configs lose the mark is changed (checked on a copy)."""
    import copy

    from triton import Config

    probe = Config({}, num_warps=1)
    probe.found_by_coordesc = True
    setstate = Config.__setstate__
    if getattr(copy.deepcopy(probe), "found_by_coordesc", False) or getattr(setstate, "mended", False):
        return

    def keeping_the_mark(self: Any, state: Any) -> None:
        setstate(self, state)
        if isinstance(state, dict) and state.get("found_by_coordesc") is True:
            self.found_by_coordesc = True

    keeping_the_mark.mended = True  # type: ignore[attr-defined]
    Config.__setstate__ = keeping_the_mark


def mark_found_by_coordesc(best: Any, configs: Iterable[Any]) -> None:
    """Marks the configs equal to `best` (the same block sizes, warps and stages, as Inductor compares
    them) as coordinate descent's."""
    winner = launch_of(best)
    for config in configs:
        if launch_of(config) == winner:
            config.found_by_coordesc = True


def kwargs_of(config: Any) -> dict[str, Any]:
    """A config's block sizes (Triton's config holds a dict, a stored one pairs)."""
    return dict(config.kwargs)


def launch_of(config: Any) -> tuple[Any, ...]:
    """A config's block sizes, warps and stages, as Inductor compares configs (Triton's or a stored one)."""
    return (sorted(kwargs_of(config).items()), config.num_warps, config.num_stages)


def relocate_local_cache(autotune_cache: Any, writing: bool) -> str | None:
    """Points an `AutotuneCache`'s local file at `relocated`'s path in this process's cache directory:
    that path, or None where the cache has no local file."""
    local = getattr(autotune_cache, "local_cache", None)
    if not (isinstance(local, tuple) and len(local) == 2 and isinstance(local[1], str)):
        return None
    path = relocated(local[1], inductor_cache_dir(), writing)
    autotune_cache.local_cache = (local[0], path)
    return path


def relocated(path: str, cache_dir: Path, writing: bool = False) -> str:
    """`path`, or the same `<2>/<name>.best_config` in `cache_dir` where `path` is another directory's and
    missing (only a name Inductor gives such a file: the path came from a bundle's pickled graph); `writing`
    a file, where the cache directory `path` names is missing. Judged with `..` resolved:
    `<cache_dir>/../elsewhere/...` is another directory's."""
    stale = Path(os.path.normpath(path))
    relative = f"{stale.parent.name}/{stale.name}"
    inside = stale.is_relative_to(os.path.normpath(cache_dir))
    there = stale.parent.parent if writing else stale
    if there.exists() or inside or not matches(RELATIVE_PATH, relative):
        return path
    return str(cache_dir / relative)
