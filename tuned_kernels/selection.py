"""Which bundles serve this process: the target must match this GPU and the compiler fingerprint this
Triton exactly; every other bundle is rejected with a reason. Pure."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tuned_kernels.matching import compiler_mismatch, target_mismatch
from tuned_kernels.model import CompilerFingerprint, Header, Target


@dataclass(frozen=True)
class BundleCandidate:
    name: str  # the wheel or directory it came from
    path: str  # the results file
    header: Header


@dataclass(frozen=True)
class RejectedBundle:
    candidate: BundleCandidate
    reason: str


@dataclass(frozen=True)
class Selection:
    selected: tuple[BundleCandidate, ...]  # best first: exact device name before same arch
    rejected: tuple[RejectedBundle, ...]
    stale: tuple[BundleCandidate, ...]  # right target, other compiler: usable as seeds only


def select_bundles(
    target: Target, compiler: CompilerFingerprint, candidates: Sequence[BundleCandidate]
) -> Selection:
    selected, rejected, stale = [], [], []
    for candidate in candidates:
        built = candidate.header
        reason = target_mismatch(built.target, target)
        if reason is None:
            reason = compiler_mismatch(built.compiler, compiler)
            if reason is not None:
                stale.append(candidate)
        if reason is None:
            selected.append(candidate)
        else:
            rejected.append(RejectedBundle(candidate, reason))
    selected.sort(key=lambda c: (c.header.target.device_name != target.device_name, c.name, c.path))
    return Selection(tuple(selected), tuple(rejected), tuple(stale))
