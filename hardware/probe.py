"""Probes device 0 through torch and Triton; honours TUNED_KERNELS_TARGET."""

from __future__ import annotations

import contextlib
import functools
import os

from tuned_kernels.hardware.archs import DeviceFacts, target_for_arch, target_from_facts

from tuned_kernels.errors import UnknownTargetError
from tuned_kernels.model import Target
from tuned_kernels.triton_edge.interpreter import interpret_from_now_on, interpreting

TARGET_ENV = "TUNED_KERNELS_TARGET"


def detect() -> Target:
    """The target of this process: TUNED_KERNELS_TARGET if it names one, else device 0, else the cpu target
    (a target name tuned-kernels does not know is ignored: enabling and `doctor` say so)."""
    override = os.environ.get(TARGET_ENV, "").strip()
    if override:
        with contextlib.suppress(UnknownTargetError):
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


def known_target(name: str) -> bool:
    """Whether `name` (as TUNED_KERNELS_TARGET may spell it: `sm90`, `SM_90`) is a target tuned-kernels knows."""
    try:
        target_for_arch(name.strip())
    except UnknownTargetError:
        return False
    return bool(name.strip())


def interpret_without_gpu() -> None:
    """The one rule for a machine with no GPU, applied by every entry point (`TUNED_KERNELS=1`, `enable()`,
    `tuned_kernels.ops`, the pytest plugin, the commands that run kernels): unless TUNED_KERNELS_TARGET names
    a target, kernels defined from now on run through Triton's interpreter, the cpu target, as if
    TRITON_INTERPRET=1 were set, and autotuned kernels are timed with a wall clock (Triton's own timer needs
    a GPU driver). Triton reads the switch when a kernel is defined, so entry points call this before any
    kernel module is imported."""
    if interpreting() or known_target(os.environ.get(TARGET_ENV, "")):
        return  # (a target tuned-kernels does not know is ignored, with one line: the rule applies)
    import torch

    if not torch.cuda.is_available():
        from tuned_kernels.triton_edge import autotuner

        interpret_from_now_on()
        autotuner.patch()  # autotuned kernels are timed with a wall clock there, served or not
