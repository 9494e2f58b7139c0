"""tuned-kernels: ahead-of-time tuned Triton kernels, shipped as per-GPU, per-compiler wheels.

`import tuned_kernels; tuned_kernels.enable()` makes every `@triton.autotune` kernel consult the installed
bundles first (`TUNED_KERNELS=1` does the same with no code change). Importing is cheap: nothing touches
torch, Triton or the disk until it is used.
"""

from __future__ import annotations

from typing import Any


def enable() -> None:
    """Every `@triton.autotune` kernel in this process, defined before or after, consults bundles first.

    On a machine with no GPU, kernels defined from now on run through Triton's interpreter (the cpu
    target), as under `tuned-kernels capture`: call it before importing the modules that define kernels."""
    from tuned_kernels.hardware.probe import interpret_without_gpu
    from tuned_kernels.registry import enable as _enable

    interpret_without_gpu()
    _enable()


def disable() -> None:
    from tuned_kernels.registry import disable as _disable

    _disable()


def stats() -> dict[str, Any]:
    """Bundles found, selected and rejected (with reasons), overlay location and size, hits, misses (of the
    registry `enable()` installed; without one, what a registry would find)."""
    from tuned_kernels.registry import Registry, installed_registry

    return (installed_registry() or Registry()).summary()


def __getattr__(name: str) -> Any:
    """`__version__`, read from the installed distribution when first asked for (scanning the installed
    distributions costs 10-20 ms, which `TUNED_KERNELS=1` would add to every interpreter start)."""
    if name == "__version__":
        from tuned_kernels.version import TOOL_VERSION

        return TOOL_VERSION
    raise AttributeError(f"module 'tuned_kernels' has no attribute {name!r}")


__all__ = ["__version__", "disable", "enable", "stats"]


def __dir__() -> list[str]:
    return sorted(__all__)
