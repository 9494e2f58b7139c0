"""The CUDA device index as Inductor writes it into code: the FX graph it keys a compiled graph by (a factory
op's `device(type='cuda', index=1)`) and the code it generates (`torch.cuda._DeviceGuard(1)`,
`torch.cuda.set_device(1)`, `get_raw_stream(1)`, each kernel's `DeviceProperties(type='cuda', index=1, …)`).
Pure: text in, text out."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MENTION = re.compile(
    r"(?P<before>_DeviceGuard\(|set_device\(|get_raw_stream\(|device\(type='cuda', index="
    r"|DeviceProperties\(type='cuda', index=|['\"]cuda:)(?P<index>\d+)"
)


# ways code names a device that `renumbered` does not rewrite: a graph holding one keeps Inductor's own key
# and is not moved (C++ wrapper code, ROCm's device properties, an index given as a bare integer)
UNMOVED = re.compile(
    r"type='hip'|device_guard\(|get_current_cuda_stream\(|device_type_cuda"
    r"|\.(?:to|cuda)\(\s*\d|\bdevice\s*=\s*\d|cuda\.device\(\s*\d"
)


def indices_named(code: str) -> set[int]:
    """Every CUDA device index `code` names in one of the ways Inductor writes one."""
    return {int(found["index"]) for found in MENTION.finditer(code)}


def renumbered(code: str, old: int, new: int) -> str | None:
    """`code` with each mention of CUDA device `old` naming `new` instead; None where it names another index
    too (a graph spanning GPUs: its indices are the program's, not where it happens to run), or names a
    device in a way this does not rewrite (`UNMOVED`)."""
    if not indices_named(code) <= {old} or UNMOVED.search(code):
        return None
    return MENTION.sub(lambda found: f"{found['before']}{new}", code)


def single_cuda_index(values: Iterable[Any]) -> int | None:
    """The one CUDA device index of the tensors among `values` (None: none on a CUDA device, or several)."""
    indices = set()
    for value in values:
        device: Any = getattr(value, "device", None)
        if getattr(device, "type", None) == "cuda":
            indices.add(device.index)
    return next(iter(indices)) if len(indices) == 1 and None not in indices else None
