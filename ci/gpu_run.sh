#!/usr/bin/env bash
# Every GPU check and benchmark in one call on a GPU machine (see BENCHMARKS.md):
#   the device tool runs it with .whl carried (our wheel plus zstandard, protobuf, platformdirs, filelock).
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
REPO=$(pwd)
cd /tmp  # the source tree's tuned_kernels/ must not shadow the installed package
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python3 -m tuned_kernels detect --json | tee "$OUT/detect.json"
TUNED_KERNELS_GPU_TESTS=1 python3 -m pytest -q -p no:cacheprovider --import-mode=importlib "$REPO/tests/test_gpu.py" 2>&1 | tail -15
python3 "$REPO/benchmarks/tune_vs_triton.py" --json "$OUT/tune_vs_triton.json" 2>&1 | tail -20
