"""Knows the machine: which GPU this is (`detect`), which compiler builds for it (`compiler_fingerprint`)."""

from tuned_kernels.hardware.archs import KNOWN_ARCHS, DeviceFacts, target_for_arch, target_from_facts
from tuned_kernels.hardware.fingerprint import compiler_fingerprint
from tuned_kernels.hardware.probe import detect

__all__ = [
    "KNOWN_ARCHS",
    "DeviceFacts",
    "compiler_fingerprint",
    "detect",
    "target_for_arch",
    "target_from_facts",
]
