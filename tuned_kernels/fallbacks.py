"""Where this process took a plainer way than the one tuned-kernels meant, counted per kind: each changes
what is measured or how fast a launch is, so `tuned_kernels.stats()` and the verbose summary name every
kind that happened, with its count. Process state only: no files, no framework imported."""

from __future__ import annotations

import threading
from collections import Counter

KINDS = {
    "parallel_compile": "a missed key's config compiled again at its timing (its parallel compile failed)",
    "direct_launch": "launched through Triton (a direct launch could not be set up)",
    "copy_engine": "the copy-engine matmul not used (the GPU driver could not be asked)",
    "owner_decides": "Inductor or Helion decided alone (tuned-kernels' hook failed)",
    "overlay_write": "a tuned config not written to the overlay (it could not be written)",
}

_counts: Counter[str] = Counter()
_lock = threading.Lock()


def count(kind: str, n: int = 1) -> None:
    """`n` more fall-backs of this kind (one of KINDS)."""
    with _lock:
        _counts[kind] += n


def counts() -> dict[str, int]:
    with _lock:
        return dict(_counts)


def described(found: dict[str, int]) -> str:
    """`2 x a missed key's config compiled again ...; 1 x ...`."""
    return "; ".join(f"{n} x {KINDS.get(kind, kind)}" for kind, n in sorted(found.items()))
