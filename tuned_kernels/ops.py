"""The built-in kernels as plain functions: `tuned_kernels.ops.matmul(a, b)` and friends.

Each launches an `@triton.autotune` kernel (`matmul` first chooses between the Triton kernel and
torch.matmul per shape, a choice tuned and shipped the same way), so with `tuned_kernels.enable()` (or
TUNED_KERNELS=1) an installed bundle picks its config without benchmarking.
"""

from tuned_kernels.aot.kernels.attention import attention
from tuned_kernels.aot.kernels.matmul import matmul, matmul_bias_act, triton_matmul
from tuned_kernels.aot.kernels.rowwise import layer_norm, rms_norm, softmax

__all__ = ["attention", "layer_norm", "matmul", "matmul_bias_act", "rms_norm", "softmax", "triton_matmul"]
