"""Run at interpreter start by tuned_kernels.pth when TUNED_KERNELS is set to anything but an off value
(0, false, no, off, empty), or a capture is running.

Costs nothing for programs that never use Triton or Inductor: `enable()` runs when the program first
imports `triton.runtime.autotuner` or `torch._inductor.config`, through one-shot import hooks; Triton's build
key is remembered between processes from the import of `triton.runtime.cache` on (before the autotuner and
Inductor take it by name: triton_edge/build_key.py). A value that is neither on nor off leaves serving off,
said in one line.
"""

from __future__ import annotations

import os
import sys
from types import ModuleType

from tuned_kernels.post_import import when_imported

WATCHED = ("triton.runtime.autotuner", "torch._inductor.config")


def _enable(_: ModuleType) -> None:
    import tuned_kernels

    tuned_kernels.enable()


def install() -> None:
    from tuned_kernels.triton_edge.build_key import remember_when_imported

    remember_when_imported()
    for name in WATCHED:
        when_imported(name, _enable)


def _asked() -> bool:
    """Whether TUNED_KERNELS (or a running capture) turns serving on; a value neither on nor off is said."""
    from tuned_kernels.errors import one_line
    from tuned_kernels.setting_values import SWITCH, SWITCH_TAKES, choice, switch

    text = os.environ.get("TUNED_KERNELS", "")
    if os.environ.get("TUNED_KERNELS_CAPTURE") or switch(text, False):
        return True
    if text.strip() and choice(text, SWITCH) is None:
        print(f"tuned-kernels: TUNED_KERNELS={one_line(text, 80)}: takes {SWITCH_TAKES}; serving is off",
              file=sys.stderr)  # fmt: skip
    return False


if _asked():
    install()
