"""tuned-kernels: ahead-of-time tuned Triton kernels, shipped as per-GPU, per-compiler wheels.

Importing this package is cheap: nothing touches torch, Triton or the disk until it is used.
"""

from tuned_kernels.version import TOOL_VERSION as __version__

__all__ = ["__version__"]
