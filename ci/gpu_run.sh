#!/usr/bin/env bash
# Every GPU check and benchmark in one call on a GPU machine (see BENCHMARKS.md):
#   the device tool runs it with .whl carried (our wheel plus zstandard, protobuf, platformdirs, filelock).
#   STEPS (default: tests and every benchmark step) picks: tests, and/or benchmarks/run.py's --steps.
set -uo pipefail
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
# as a pip install into site-packages would, put tuned_kernels.pth where Python reads it (TUNED_KERNELS=1
# and capture need it; a --target folder on PYTHONPATH is not read for .pth files)
cp /tmp/site/tuned_kernels.pth "$(python3 -c 'import site; print(site.getsitepackages()[0])')/" || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
REPO=$(pwd)
STEPS=${STEPS:-tests,tune,cold,hot,quality,load,size}
cd /tmp  # the source tree's tuned_kernels/ must not shadow the installed package
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
python3 -m tuned_kernels detect --json > "$OUT/detect.json"
python3 -m tuned_kernels doctor | tee "$OUT/doctor.txt"
if [[ ,$STEPS, == *,tests,* ]]; then
  TUNED_KERNELS_GPU_TESTS=1 python3 -m pytest -q -p no:cacheprovider --import-mode=importlib "$REPO/tests/test_gpu.py" 2>&1 | tail -25
fi
BENCH=${STEPS#tests}; BENCH=${BENCH#,}
if [[ -n $BENCH ]]; then
  python3 "$REPO/benchmarks/run.py" --steps "$BENCH" ${BENCH_ARGS:-} --json "$OUT/benchmarks.json" 2>&1 | tail -30
fi
