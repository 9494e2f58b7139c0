"""Which bundles may serve code. A bundle's configs are data: each is checked against the kernel's own
configs before it is used, so they are served from any bundle that fits. Its compiled kernels (machine code
the GPU runs) and torch.compile graphs (Inductor's pickles, C++ objects the loader runs) are code: served
only from a bundle the user chose as code: with trusted keys set, one those keys signed; otherwise an
installed bundle package (installing it ran its code already) or a file that no one but this user (or
root) can write. Pure: the facts come from `results/provenance.py`."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tuned_kernels.signing import UNCHECKABLE, short


class Origin(enum.Enum):
    PACKAGE = "an installed bundle package"
    PRIVATE_FILE = "a file only this user can write"
    SHARED_FILE = "a file others can write"


@dataclass(frozen=True)
class Provenance:
    """Where a bundle file came from, as far as this machine can tell, and who signed it."""

    origin: Origin
    writable_by_others: str | None = None  # SHARED_FILE: the path others can write, and who
    signer: str | None = None  # the key whose signature over the file holds
    signature_problem: str | None = None  # a signature beside the file that does not hold: why


def why_no_code(provenance: Provenance, trusted_keys: frozenset[str] | None = None) -> str | None:
    """Why a bundle's compiled kernels and graphs must not be served (None: they may be). With trusted keys
    set (`TUNED_KERNELS_TRUSTED_KEYS`), code comes only from bundles one of them signed; without, from
    installed packages and files only this user can write. A signature that does not hold serves no code
    either way."""
    problem = provenance.signature_problem
    if problem is not None and not (problem == UNCHECKABLE and trusted_keys is None):  # unchecked: unsigned
        return problem
    if trusted_keys is not None:
        if provenance.signer is None:
            return "it is not signed, and TUNED_KERNELS_TRUSTED_KEYS is set"
        if provenance.signer not in trusted_keys:
            return (
                f"it is signed by {short(provenance.signer)}, a key TUNED_KERNELS_TRUSTED_KEYS does not name"
            )
        return None
    if provenance.origin is Origin.SHARED_FILE:
        return provenance.writable_by_others
    return None
