"""What Inductor's graph keys hold for tuned-kernels' choices hook on torch after 2.11 (the choices classes'
`uuid`); the graph-key patch in hooks.py leaves it out of the keys."""

from __future__ import annotations

from tuned_kernels.version import TOOL_VERSION


def hook_uuid() -> str:
    return f"tuned-kernels {TOOL_VERSION}"
