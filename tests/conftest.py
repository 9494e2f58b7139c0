import os

# Every test runs kernels through Triton's interpreter unless a GPU test says otherwise.
if not os.environ.get("TUNED_KERNELS_GPU_TESTS"):
    os.environ.setdefault("TRITON_INTERPRET", "1")
