"""Installing the Inductor hooks, done once `torch._inductor.config` is imported (importing nothing more:
the choices class and the feedback saver are set up on Inductor's first use of them).

A program that sets its own `inductor_choices_class` keeps it (one warning: GEMM choices are then not
served). The bundles' tuned generated kernels go into Inductor's autotune cache (autotune_cache.py), their
reductions' halving choices to its autotuner (reduction_choices.py), their compiled graphs into its FX-graph
and AOTAutograd caches (graphs.py); inside a capture, torch's source hash is recorded at exit
(source_key.py) and the generated kernels' configs are timed by the tuner's device timing
(config_timing.py).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from tuned_kernels import model
from tuned_kernels.errors import one_line, warn
from tuned_kernels.inductor_edge import graph_moves, reduction_choices, unloadable
from tuned_kernels.inductor_edge.hook_id import hook_uuid
from tuned_kernels.post_import import when_import_done, when_imported

Stored = Callable[[model.KernelIdentity], Sequence[model.Entry]]  # the bundles' entries for a kernel
PlaceGraphs = Callable[[], None]  # puts the bundles' compiled graphs into Inductor's cache directory

CHOICES_KEY = "inductor_choices_class"  # Inductor's config entry for the choices hook
_saver_added = [False]
_watching = [False]


def install_when_imported(stored: Stored, place_graphs: PlaceGraphs = lambda: None) -> None:
    """Installs the hooks once `torch._inductor.config` is imported (now, if it is): before Inductor compiles
    a graph, so the bundles' compiled graphs are in its caches when it looks."""
    if not _watching[0]:
        _watching[0] = True
        when_imported("torch._inductor.config", lambda _: install(stored, place_graphs))


def tuned_choices() -> Any:
    """`config.inductor_choices_class`: called by Inductor once per thread that lowers a graph (Inductor's
    own choices where this torch is laid out otherwise than the hook expects, said once)."""
    from tuned_kernels.inductor_edge.shapes import INDUCTOR_CHOICES
    from tuned_kernels.internals import holds

    if not all(holds(shape) for shape in INDUCTOR_CHOICES):
        return _inductors_own_choices()
    from tuned_kernels.inductor_edge.choices import TunedChoices, remember_timings, watch_final_choices

    if not _saver_added[0]:
        from torch._inductor.select_algorithm import add_feedback_saver

        add_feedback_saver(remember_timings)
        watch_final_choices()
        _saver_added[0] = True
    return TunedChoices()


def install(stored: Stored = lambda _: (), place_graphs: PlaceGraphs = lambda: None) -> None:
    from torch._inductor import config

    current = config.inductor_choices_class
    if current is None:
        config.inductor_choices_class = tuned_choices
        when_imported("torch._inductor.codecache", _keys_without_the_choices_hook)
    elif current is not tuned_choices:
        warn(
            f"torch._inductor.config.inductor_choices_class is set to {getattr(current, '__name__', current)}"
            " by the program: Inductor's GEMM choices are not served"
        )
    when_imported("torch._inductor.codecache", graph_moves.install)
    _fill_autotune_cache(stored)
    reduction_choices.serve(stored(reduction_choices.identity()))
    place_graphs()
    _mend_autotune_cache_reads()
    if os.environ.get("TUNED_KERNELS_CAPTURE"):
        from tuned_kernels.inductor_edge import config_timing, frame_capture, frames, source_key
        from tuned_kernels.inductor_edge.autotune_cache import inductor_cache_dir

        atexit.register(source_key.record_for_capture)
        when_import_done("torch._inductor.runtime.triton_heuristics", lambda _: config_timing.install())
        frames.capture_when_imported(inductor_cache_dir() / "frames", frame_capture.capture)


def _keys_without_the_choices_hook(codecache: Any) -> None:
    """Inductor's graph keys see no choices hook where tuned-kernels' is set, so a graph compiled with
    tuned-kernels on is found by a run without it and the other way round (a machine warm before tuned-kernels
    was turned on stays warm). The hook only chooses among ways to compute the same graph (a GEMM's template,
    a fusion), never what the graph computes; the keys still hold everything else Inductor puts in them."""
    from tuned_kernels.inductor_edge.shapes import INDUCTOR_GRAPH_KEY
    from tuned_kernels.internals import holds

    details = getattr(codecache, "FxGraphHashDetails", None)
    if not holds(INDUCTOR_GRAPH_KEY, details) or not isinstance(details, type):
        return
    original = vars(details).get("__init__")
    if original is None or getattr(original, "tuned_kernels_keyed", False):
        return

    @functools.wraps(original)
    def keyed(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        hashed = getattr(self, "inductor_config", None)
        if isinstance(hashed, dict) and _is_ours(hashed.get(CHOICES_KEY)):
            hashed[CHOICES_KEY] = None  # as in a run without tuned-kernels

    keyed.tuned_kernels_keyed = True  # type: ignore[attr-defined]
    type.__setattr__(details, "__init__", keyed)


def _inductors_own_choices() -> Any:
    """Inductor's own choices, where this torch is laid out otherwise than the hook expects: keyed as the
    hook is (Inductor asks what the factory makes for a uuid), so graph keys stay those of a run without it."""
    from torch._inductor.choices import InductorChoices

    class InductorsOwnChoices(InductorChoices):
        def uuid(self) -> str:
            return hook_uuid()

    return InductorsOwnChoices()


def _is_ours(hashed: Any) -> bool:
    """Whether a graph key's choices entry is tuned-kernels' hook (the factory itself on torch 2.11, the uuid
    of what it makes on later torch)."""
    return hashed is tuned_choices or (isinstance(hashed, str) and hashed == hook_uuid())


def _fill_autotune_cache(stored: Stored) -> None:
    from tuned_kernels.inductor_edge import autotune_cache

    entries = stored(autotune_cache.identity())
    if entries:
        try:
            installed = autotune_cache.install(entries, autotune_cache.inductor_cache_dir())
        except OSError as exc:  # a read-only or full cache directory: Inductor tunes as usual
            warn(f"cannot write Inductor's autotune cache: {one_line(str(exc))}; Inductor tunes as usual")
            return
        if installed.refused:
            more = f" (and {len(installed.refused) - 1} more)" if len(installed.refused) > 1 else ""
            with contextlib.suppress(Warning):  # a warning made an error (-W error): serving goes on
                warn(f"left out a tuned config of the bundles: {one_line(installed.refused[0])}{more}; "
                     "Inductor tunes that kernel as usual")  # fmt: skip


def _mend_autotune_cache_reads() -> None:
    from tuned_kernels.inductor_edge import autotune_cache

    try:
        autotune_cache.mend_read_best()
        autotune_cache.keep_coordesc_mark_through_pickling()
    except (ImportError, AttributeError) as exc:  # an Inductor laid out otherwise tunes them again
        warn(f"cannot mend Inductor's autotune cache look-ups: {one_line(str(exc))}")
    # not imported here: importing it while Inductor's config is being imported is circular (torch 2.11)
    when_imported("torch._inductor.runtime.triton_heuristics", lambda _: _mend_kernel_loads())


def _mend_kernel_loads() -> None:
    from tuned_kernels.inductor_edge import autotune_cache

    reduction_choices.install()
    autotune_cache.mend_static_recheck()


def uninstall() -> None:
    import sys

    _watching[0] = False
    unloadable.stop_watching()
    reduction_choices.stop()
    config = sys.modules.get("torch._inductor.config")
    if config is not None and getattr(config, "inductor_choices_class", None) is tuned_choices:
        config.inductor_choices_class = None  # type: ignore[attr-defined]


def forget_compiled_graphs() -> None:
    """Dynamo forgets the graphs it compiled: the next `torch.compile`d call compiles afresh."""
    import torch._dynamo

    torch._dynamo.reset()
