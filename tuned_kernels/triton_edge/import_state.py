"""Whether the program's own `import triton` has finished: read from importlib's private state (a module
being imported is in `sys.modules` before its code has run), so only here."""

from __future__ import annotations

import sys
import time


def triton_imported(timeout_s: float = 120.0) -> bool:
    """Waits until the program's own `import triton` has finished (serving starts from inside it): a
    Triton module imported from this thread meanwhile would deadlock the two imports, or hand the
    program a half-initialised module. False if Triton is not imported within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        module = sys.modules.get("triton")
        if module is not None and not getattr(getattr(module, "__spec__", None), "_initializing", False):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
