"""The compiler fingerprint: what must match for tuned configs and compiled kernels to carry over.

Its hash follows Triton's own cache keys: `triton_key()` (Triton's version plus hashes of its compiler,
backends, language and libtriton) and the backend's `hash()` for the target (ptxas version and arch on
NVIDIA; target and codegen revision on AMD). The cpu target runs the interpreter, so it has no backend.
"""

from __future__ import annotations

import functools
import hashlib
import re

from tuned_kernels.hardware.archs import triton_target_of

from tuned_kernels.model import CompilerFingerprint, Target
from tuned_kernels.triton_edge import compiler_facts


def compiler_fingerprint(target: Target) -> CompilerFingerprint:
    return _fingerprint_for_arch(target.arch, target.runtime_version)


@functools.lru_cache(maxsize=16)
def _fingerprint_for_arch(arch: str, runtime_version: str) -> CompilerFingerprint:
    import torch
    import triton

    versions: dict[str, str] = {}
    if runtime_version:
        versions["runtime"] = runtime_version
    backend_hash = "interpreter"
    if arch != "cpu":
        backend_hash = compiler_facts.backend_hash(*triton_target_of(arch))
        versions.update(_backend_versions(backend_hash))
    return CompilerFingerprint(
        triton_version=triton.__version__,
        triton_hash=hashlib.sha256(compiler_facts.triton_key().encode("utf-8")).hexdigest(),
        backend_hash=hashlib.sha256(backend_hash.encode("utf-8")).hexdigest(),
        backend_versions=tuple(sorted(versions.items())),
        torch_version=str(torch.__version__),
    )


def _backend_versions(backend_hash: str) -> dict[str, str]:
    """Human-readable compiler versions read out of the backend hash (ptxas release, AMD codegen revision)."""
    found: dict[str, str] = {}
    ptxas = re.search(r"release (\d+\.\d+), V([\d.]+)", backend_hash)
    if ptxas:
        found["ptxas"] = ptxas.group(2)
    amd = re.search(r"\)-([0-9a-f]{40})", backend_hash)
    if amd:
        found["amd_codegen"] = amd.group(1)[:12]
    return found
