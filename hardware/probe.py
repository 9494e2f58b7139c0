"""Probes device 0 through torch and Triton; honours TUNED_KERNELS_TARGET."""

from __future__ import annotations

import functools
import os

from tuned_kernels.hardware.archs import DeviceFacts, target_for_arch, target_from_facts

from tuned_kernels.model import Target
from tuned_kernels.triton_edge.interpreter import interpret_from_now_on, interpreting

TARGET_ENV = "TUNED_KERNELS_TARGET"


def detect() -> Target:
    """The target of this process: TUNED_KERNELS_TARGET if set, else device 0, else the cpu target."""
    override = os.environ.get(TARGET_ENV, "").strip()
    if override:
        return target_for_arch(override)
    return _detected()


@functools.lru_cache(maxsize=1)
def _detected() -> Target:
    return target_from_facts(probe_device())


def probe_device() -> DeviceFacts:
    """Reads device 0's facts; no GPU (or Triton's interpreter) gives the cpu facts."""
    if interpreting():
        return DeviceFacts(backend="")
    import torch

    if not torch.cuda.is_available():
        return DeviceFacts(backend="")
    props = torch.cuda.get_device_properties(0)
    hip = getattr(torch.version, "hip", None)
    return DeviceFacts(
        backend="hip" if hip else "cuda",
        name=props.name,
        capability=(props.major, props.minor),
        gcn_arch_name=getattr(props, "gcnArchName", ""),
        multiprocessor_count=props.multi_processor_count,
        memory_bytes=props.total_memory,
        driver_version=_driver_version(),
        runtime_version=str(hip or torch.version.cuda or ""),
    )


def _driver_version() -> str:
    try:
        import torch

        version = torch.cuda.driver_version() if hasattr(torch.cuda, "driver_version") else None
        if version:
            return f"{version // 1000}.{(version % 1000) // 10}"
    except Exception:  # best effort: the driver version is informational
        pass
    return ""


def interpret_without_gpu() -> None:
    """On a machine with no GPU, kernels run through Triton's interpreter: the cpu target.
    Call before any kernel module is imported (Triton reads the switch when kernels are defined)."""
    if interpreting() or os.environ.get(TARGET_ENV):
        return
    import torch

    if not torch.cuda.is_available():
        interpret_from_now_on()
