"""Turning serving on and off: `enable()` builds a `Registry` from the environment's settings, installs it
as this process's resolver, starts its warm-up (warmup.py), patches Triton's autotuner through the Triton
edge, sets Inductor's choices hook through the Inductor edge (once Inductor is imported) and Helion's
autotune cache through the Helion edge (once Helion is imported); `disable()` undoes them.
Tests build their own `Registry` and install it with `resolving.installed` instead."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

from tuned_kernels.registry import warmup
from tuned_kernels.registry.environment_check import environment_problems
from tuned_kernels.registry.runtime import Registry
from tuned_kernels.registry.settings import Settings
from tuned_kernels.registry.strict import strict_stop

from tuned_kernels import model, resolving
from tuned_kernels.helion_edge import hooks as helion_hooks
from tuned_kernels.inductor_edge import compile_pool, frames
from tuned_kernels.inductor_edge import hooks as inductor_hooks
from tuned_kernels.triton_edge import autotuner, cache_manager


def enable(settings: Settings | None = None) -> Registry:
    """From now on every autotuned kernel and implementation choice in the process asks the registry
    (kept if one is already installed and no settings are given)."""
    from tuned_kernels.triton_edge.build_key import remember_when_imported

    remember_when_imported()  # a program calling enable() itself, as TUNED_KERNELS=1 does
    registry = installed_registry()
    if registry is None or settings is not None:
        registry = Registry(settings or Settings.from_environ(os.environ))
        if settings is None:  # what the environment asks and cannot be honoured: one line each
            for problem in environment_problems(os.environ):
                registry.warn(problem)
        resolving.install(registry)
        if registry.settings.warmup and registry.settings.capture is None:
            registry.warmup = warmup.start(registry)
    autotuner.patch()
    inductor_hooks.install_when_imported(_stored, _place_graphs)
    from tuned_kernels.inductor_edge import watch

    if registry.settings.strict:
        watch.install(strict_stop)
    else:
        watch.notice_graph_compiles(_say_graph_compiled)
    helion_hooks.install_when_imported()
    return registry


def disable() -> None:
    resolving.install(None)
    autotuner.unpatch()
    cache_manager.uninstall()
    inductor_hooks.uninstall()
    frames.stop()
    compile_pool.release(start=False)
    helion_hooks.uninstall()


def _stored(identity: model.KernelIdentity) -> list[model.Entry]:
    """The bundles' entries for a kernel, from the registry installed when Inductor asks (none if none)."""
    registry = installed_registry()
    return registry.stored(identity) if registry is not None else []


def _place_graphs() -> None:
    """The bundles' compiled graphs into Inductor's cache directory, by the registry installed then."""
    from tuned_kernels.registry.graph_files import frames_offered

    from tuned_kernels.inductor_edge.autotune_cache import inductor_cache_dir

    registry = installed_registry()
    if registry is not None:
        registry.place_graphs(inductor_cache_dir())
        if registry.stats.graph_files_placed + registry.stats.graph_files_present:
            compile_pool.hold()  # started if a graph is compiled after all (_say_graph_compiled)
        loaded = registry.load()
        if registry.settings.frames:
            frames.serve_when_imported(frames_offered(loaded.graphs))
        if loaded.torch_keys:
            from tuned_kernels.registry.graph_files import cpp_objects

            from tuned_kernels.inductor_edge import source_key

            source_key.serve_when_imported(loaded.torch_keys, cpp_objects(loaded.graphs))


def _say_graph_compiled(doing: str) -> None:
    """Once per process: a graph compiled here though the bundles offered graphs (else nothing to say).
    Inductor's compile workers start now, if held back for the bundles' graphs."""
    compile_pool.release()
    registry = installed_registry()
    if registry is None:
        return
    offered = registry.stats.graph_files_placed + registry.stats.graph_files_present
    said = (
        f"{doing} that none of the bundles' {offered} torch.compile graph files holds (its inputs, their device "
        "index, torch or Inductor's settings differ from the capture's); it compiles as it would without them"
    )
    explained = registry.stats.graph_files_refused  # a refused file was said already: that is why
    if offered and not explained and said not in registry.problems:
        registry.warn(said)


def is_enabled() -> bool:
    return installed_registry() is not None


def installed_registry() -> Registry | None:
    current = resolving.current()
    return current if isinstance(current, Registry) else None


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """Within this block nothing answers for kernels: they tune as Triton does."""
    with resolving.installed(None):
        yield
