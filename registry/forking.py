"""What a process that forks must redo in the child: locks another thread may have held, work that was
the parent's to finish."""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable


def in_every_forked_child(method: Callable[[], None]) -> None:
    """Calls the bound `method` in each child this process forks from now on, for as long as its object
    lives (the hook holds it weakly, so it keeps nothing alive)."""
    ref = weakref.WeakMethod(method)

    def in_forked_child() -> None:
        alive = ref()
        if alive is not None:
            alive()

    os.register_at_fork(after_in_child=in_forked_child)
