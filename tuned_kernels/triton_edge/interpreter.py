"""Whether kernels run through Triton's interpreter (TRITON_INTERPRET: the cpu target). The one place
that asks."""

from __future__ import annotations

import os

INTERPRET_ENV = "TRITON_INTERPRET"


def interpreting() -> bool:
    return os.environ.get(INTERPRET_ENV, "0") not in ("", "0")


def interpret_from_now_on() -> None:
    """Kernels compiled from now on in this process (and its children) run on the interpreter."""
    os.environ[INTERPRET_ENV] = "1"
