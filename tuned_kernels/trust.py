"""Which bundles may serve code. A bundle's configs are data: each is checked against the kernel's own
configs before it is used, so they are served from any bundle that fits. Its compiled kernels (machine code
the GPU runs) and torch.compile graphs (Inductor's pickles, C++ objects the loader runs) are code: served
only from a bundle the user chose as code, which is an installed bundle package (installing it ran its
code already) or a file that no one but this user (or root) can write. Pure: the facts come from
`results/provenance.py`."""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Origin(enum.Enum):
    PACKAGE = "an installed bundle package"
    PRIVATE_FILE = "a file only this user can write"
    SHARED_FILE = "a file others can write"


@dataclass(frozen=True)
class Provenance:
    """Where a bundle file came from, as far as this machine can tell."""

    origin: Origin
    writable_by_others: str | None = None  # SHARED_FILE: the path others can write, and who


def why_no_code(provenance: Provenance) -> str | None:
    """Why a bundle's compiled kernels and graphs must not be served (None: they may be)."""
    if provenance.origin is Origin.SHARED_FILE:
        return f"{provenance.writable_by_others}, so its compiled kernels and graphs are not run"
    return None
