"""`TUNED_KERNELS_STRICT=1`: a served program that would tune a key or compile a graph the bundles lack
stops instead, with one line naming it and exit status 3, so a CI job proves that a bundle covers a
program. The line goes out before the process ends without unwinding (no traceback, no exit handlers: the
tuning or compiling never starts)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import NoReturn

from tuned_kernels.errors import one_line

EXIT_STATUS = 3


def strict_stop(what: str) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    message = f"tuned-kernels: TUNED_KERNELS_STRICT=1: {one_line(what, 300)}; stopping\n"
    try:
        os.write(2, message.encode("utf-8", "replace"))
    finally:
        os._exit(EXIT_STATUS)
