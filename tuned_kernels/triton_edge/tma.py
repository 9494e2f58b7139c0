"""Whether a launch may hand Triton tensor descriptors for the GPU's copy engine (TMA): NVIDIA Hopper
(sm90) and later. Asked of a tensor's GPU (once per device), or, for shape-only `meta` tensors, of the
target Triton compiles for now (`compile.compiling_for`'s, else this machine's GPU), so that probing a
launch with `meta` inputs picks the kernel a real launch on that target would.
"""

from __future__ import annotations

from typing import Any

MIN_ARCH = 90  # sm90: Hopper

_by_device: dict[int, bool] = {}


def copy_engine(like: Any) -> bool:
    """Whether launches on `like`'s device (a torch tensor) can use the copy engine."""
    if like.is_cuda:
        index = like.get_device()
        found = _by_device.get(index)
        if found is None:
            found = _by_device[index] = _cuda_capability(index) >= MIN_ARCH
        return found
    return bool(like.is_meta) and _compile_target_has_it()


def _cuda_capability(index: int) -> int:
    import torch

    if torch.version.hip is not None:  # ROCm answers in CUDA's terms but has no such copy engine
        return 0
    major, minor = torch.cuda.get_device_capability(index)
    return major * 10 + minor


def _compile_target_has_it() -> bool:
    try:
        from triton.runtime.driver import driver

        target = driver.active.get_current_target()
    except Exception:  # no GPU driver here (the interpreter, a CPU machine): the plain kernels
        from tuned_kernels import fallbacks

        fallbacks.count("copy_engine")
        return False
    return target.backend == "cuda" and isinstance(target.arch, int) and target.arch >= MIN_ARCH
