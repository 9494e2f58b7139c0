"""GPU architectures: normalizing what a device reports into the arch names bundles use. Pure.

NVIDIA reports a compute capability (9, 0) -> `sm90`; AMD a gcnArchName such as `gfx942:sramecc+:xnack-`
-> `gfx942`. `sm90a`/`sm100a` name the arch-specific feature sets for cross-builds; a detected H100 is `sm90`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tuned_kernels.errors import UnknownTargetError
from tuned_kernels.model import Target, Vendor

NVIDIA_ARCHS = (
    "sm70",
    "sm75",
    "sm80",
    "sm86",
    "sm87",
    "sm89",
    "sm90",
    "sm90a",
    "sm100",
    "sm100a",
    "sm103",
    "sm110",
    "sm120",
    "sm121",
)
AMD_ARCHS = ("gfx90a", "gfx942", "gfx950", "gfx1100", "gfx1101", "gfx1200", "gfx1201")
KNOWN_ARCHS: tuple[str, ...] = (*NVIDIA_ARCHS, *AMD_ARCHS, "cpu")


@dataclass(frozen=True)
class DeviceFacts:
    """What torch and Triton report about device 0, recorded as plain values (fixtures record these)."""

    backend: str  # "cuda", "hip" or "" (no GPU)
    name: str = ""
    capability: tuple[int, int] = (0, 0)
    gcn_arch_name: str = ""
    multiprocessor_count: int = 0
    memory_bytes: int = 0
    driver_version: str = ""
    runtime_version: str = ""


def vendor_of(arch: str) -> Vendor:
    if arch.startswith("sm"):
        return "nvidia"
    if arch.startswith("gfx"):
        return "amd"
    return "cpu"


def normalize_gcn_arch(gcn_arch_name: str) -> str:
    """`gfx942:sramecc+:xnack-` -> `gfx942`: the feature flags do not change which kernels fit."""
    return gcn_arch_name.split(":", 1)[0].strip().lower()


def nvidia_arch(major: int, minor: int) -> str:
    return f"sm{major}{minor}"


def target_from_facts(facts: DeviceFacts) -> Target:
    if facts.backend == "cuda":
        arch = nvidia_arch(*facts.capability)
        vendor: Vendor = "nvidia"
    elif facts.backend == "hip":
        arch = normalize_gcn_arch(facts.gcn_arch_name)
        vendor = "amd"
    else:
        return Target(vendor="cpu", arch="cpu", device_name="cpu (Triton interpreter)")
    return Target(
        vendor=vendor,
        arch=arch,
        device_name=facts.name,
        multiprocessor_count=facts.multiprocessor_count,
        memory_bytes=facts.memory_bytes,
        driver_version=facts.driver_version,
        runtime_version=facts.runtime_version,
    )


def target_for_arch(arch: str) -> Target:
    """The generic target for an arch name (TUNED_KERNELS_TARGET, --target): no device facts."""
    name = arch.strip().lower().replace("_", "")
    if name not in KNOWN_ARCHS:
        raise UnknownTargetError(f"unknown target {arch!r}; valid targets: {', '.join(KNOWN_ARCHS)}")
    if name == "cpu":
        return Target(vendor="cpu", arch="cpu", device_name="cpu (Triton interpreter)")
    return Target(vendor=vendor_of(name), arch=name)


def triton_target_of(arch: str) -> tuple[str, int | str, int]:
    """The (backend, arch, warp_size) that Triton's GPUTarget takes for one of our arch names."""
    if arch.startswith("sm"):
        match = re.fullmatch(r"sm(\d+)(\d)a?", arch)
        assert match, arch
        return ("cuda", int(match.group(1)) * 10 + int(match.group(2)), 32)
    if arch.startswith("gfx"):
        return ("hip", arch, 64 if arch.startswith(("gfx9",)) else 32)
    raise UnknownTargetError(
        f"target {arch!r} has no GPU compiler (the cpu target runs Triton's interpreter)"
    )
