"""Run at interpreter start by tuned_kernels.pth when TUNED_KERNELS=1 (or a capture is running).

Costs nothing for programs that never use Triton or Inductor: `enable()` runs when the program first
imports `triton.runtime.autotuner` or `torch._inductor.config`, through one-shot import hooks.
"""

from __future__ import annotations

from types import ModuleType

from tuned_kernels.post_import import when_imported

WATCHED = ("triton.runtime.autotuner", "torch._inductor.config")


def _enable(_: ModuleType) -> None:
    import tuned_kernels

    tuned_kernels.enable()


def install() -> None:
    for name in WATCHED:
        when_imported(name, _enable)


install()
