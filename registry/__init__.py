"""Finds installed bundles at run time, selects the one for this GPU and compiler, serves its configs."""

from tuned_kernels.registry.hook import disable, disabled, enable, is_enabled

__all__ = ["disable", "disabled", "enable", "is_enabled"]
