"""The built-in kernels as plain functions: `tuned_kernels.ops.matmul(a, b)` and friends.

Each launches an `@triton.autotune` kernel (`matmul` first chooses between the Triton kernel and
torch.matmul per shape, a choice tuned and shipped the same way), so with `tuned_kernels.enable()` (or
TUNED_KERNELS=1) an installed bundle picks its config without benchmarking. On a machine with no GPU the
kernels run through Triton's interpreter (the cpu target), as everywhere in tuned-kernels.
"""

from tuned_kernels.hardware.probe import interpret_without_gpu

interpret_without_gpu()  # before the kernels below are defined: Triton decides then

from tuned_kernels.kernels.attention import attention  # noqa: E402
from tuned_kernels.kernels.matmul import matmul, matmul_bias_act, triton_matmul  # noqa: E402
from tuned_kernels.kernels.rowwise import layer_norm, rms_norm, softmax  # noqa: E402

__all__ = ["attention", "layer_norm", "matmul", "matmul_bias_act", "rms_norm", "softmax", "triton_matmul"]
