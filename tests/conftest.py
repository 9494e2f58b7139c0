import os

# Every test runs kernels through Triton's interpreter unless a GPU test says otherwise.
if not os.environ.get("TUNED_KERNELS_GPU_TESTS"):
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):  # type: ignore[no-untyped-def]
    import pytest

    if os.environ.get("TUNED_KERNELS_GPU_TESTS"):
        return
    skip = pytest.mark.skip(reason="needs a GPU: run ci/gpu_run.sh on a GPU machine")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
