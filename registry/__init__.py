"""Serving at run time: finds installed bundles, selects those for this GPU and compiler, answers every
autotuned kernel from them, tunes misses once into the per-user overlay."""

from tuned_kernels.registry.runtime import Registry
from tuned_kernels.registry.serve import disable, disabled, enable, installed_registry, is_enabled
from tuned_kernels.registry.settings import Settings

__all__ = ["Registry", "Settings", "disable", "disabled", "enable", "installed_registry", "is_enabled"]
