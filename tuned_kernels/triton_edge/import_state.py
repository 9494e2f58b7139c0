"""Whether the program's own `import triton` has finished (post_import.being_imported)."""

from __future__ import annotations

import sys
import time

from tuned_kernels.post_import import being_imported


def triton_imported(timeout_s: float = 120.0) -> bool:
    """Waits until the program's own `import triton` has finished (serving starts from inside it): a
    Triton module imported from this thread meanwhile would deadlock the two imports, or hand the
    program a half-initialised module. False if Triton is not imported within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        module = sys.modules.get("triton")
        if module is not None and not being_imported(module):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
