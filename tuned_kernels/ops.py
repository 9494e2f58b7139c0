"""The built-in kernels as plain functions: `tuned_kernels.ops.matmul(a, b)` and friends.

Each launches an `@triton.autotune` kernel, so with `tuned_kernels.enable()` (or TUNED_KERNELS=1) an
installed bundle picks its config without benchmarking.
"""

from tuned_kernels.aot.kernels.attention import attention
from tuned_kernels.aot.kernels.matmul import matmul_bias_act
from tuned_kernels.aot.kernels.matmul import triton_matmul as matmul
from tuned_kernels.aot.kernels.rowwise import layer_norm, rms_norm, softmax

__all__ = ["attention", "layer_norm", "matmul", "matmul_bias_act", "rms_norm", "softmax"]
