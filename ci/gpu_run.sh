#!/usr/bin/env bash
# Every GPU check and benchmark in one call on a GPU machine (see BENCHMARKS.md):
#   the device tool runs it with .whl carried (our wheel plus zstandard, protobuf, platformdirs, filelock;
#   for the tests of real programs and Helion also fla-core, liger-kernel, helion and filecheck; for the
#   dask step dask, distributed and the few of their dependencies the machine lacks).
#   STEPS (default: tests and every benchmark step) picks: tests, matrix (tests/test_serving_matrix.py on
#   the GPU, its table in $OUT/serving-matrix.md; MATRIX_ROWS: parts of row names, to run some), helion,
#   miss (benchmarks/miss.py, with its MISS_ARGS), predict-first (benchmarks/predict_first_call.py), verify (benchmarks/verify_start.py, on
#   this machine's CPU: carry cryptography and cffi wheels), timing-noise (benchmarks/timing_noise.py), card-ranking
#   (benchmarks/card_ranking.py --from CARD_RANKING_FROM, a speedup result file in the tree), hf
#   (benchmarks/hf_frames.py --device cuda --baselines with its HF_ARGS: Hugging Face models captured and
#   served, the machine's own transformers; its table in $OUT/hf-frames.md; HF_BASELINES=0 leaves the plain
#   runs out) and/or benchmarks/run.py's --steps.
#   helion: benchmarks/helion_first_call.py, its HELION_MODES (default all) in HELION_WORK (kept in
#   $OUT/helion-work.tgz, to carry to the next call: a search of every kernel may take most of one call).
#   A failing test or step makes the script exit non-zero, after the other steps have run.
set -uo pipefail
export PYTHONUNBUFFERED=1
failed=0
python3 -m pip install -q --no-index --no-deps --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
python3 ci/wheel_is_current.py /tmp/site/tuned_kernels . || exit 1  # a wheel older than the tree measures old code
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
  # the GPU tests and the internals' shapes on this torch (tests/test_internals.py); the whole log comes back
  # in $OUT, what is printed is its end (GPU_TESTS_K: pytest's -k, to run some). They take about a minute
  # each: GPU_TESTS_BUDGET_S stops them (as Ctrl-C does: the tests passed and failed so far still listed by
  # name) so that the steps after them still run within the call.
  TUNED_KERNELS_GPU_TESTS=1 timeout -k 60 -s INT "${GPU_TESTS_BUDGET_S:-0}" python3 -m pytest -q -rfEp \
    -p no:cacheprovider --import-mode=importlib "$REPO/tests/test_gpu.py" "$REPO/tests/test_internals.py" \
    -k "${GPU_TESTS_K:-}" > "$OUT/gpu-tests.log" 2>&1
  case $? in
    0) ;;
    124) echo "GPU TESTS STOPPED AT THEIR BUDGET (${GPU_TESTS_BUDGET_S} s): the rest did not run"; failed=1 ;;
    *) echo "GPU TESTS FAILED"; failed=1 ;;
  esac
  tail -25 "$OUT/gpu-tests.log"
fi
if [[ ,$STEPS, == *,matrix,* ]]; then
  # where a bundle is served and where not, on this GPU: the table goes to $OUT/serving-matrix.md
  PYTHONPATH=$PYTHONPATH:$REPO TUNED_KERNELS_GPU_TESTS=1 MATRIX_TABLE="$OUT/serving-matrix.md" python3 -m pytest -q -p no:cacheprovider \
    --import-mode=importlib "$REPO/tests/test_serving_matrix.py" > "$OUT/matrix-tests.log" 2>&1 || { echo "MATRIX FAILED"; failed=1; }
  tail -25 "$OUT/matrix-tests.log"; cat "$OUT/serving-matrix.md" 2>/dev/null
  STEPS=${STEPS/matrix/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,helion,* ]]; then
  # Helion's benchmark workers are spawned processes, which died on these machines ("worker pipe closed
  # before sending result"): Helion times its candidates in its own process here
  HELION_WORK=${HELION_WORK:-/tmp/helion-work}; mkdir -p "$HELION_WORK"
  HELION_AUTOTUNE_BENCHMARK_SUBPROCESS=0 python3 "$REPO/benchmarks/helion_first_call.py" --work "$HELION_WORK" \
    --modes "${HELION_MODES:-helion,capture,bundle,helion-warm}" --json "$OUT/helion.json" 2>&1 | tail -30 || failed=1
  # one file: a call brings back a few files only
  tar czf "$OUT/helion-work.tgz" -C "$HELION_WORK" $(cd "$HELION_WORK" && ls -d helion-cache helion-results.json helion.pb.zst 2>/dev/null)
  STEPS=${STEPS/helion/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,miss,* ]]; then
  python3 "$REPO/benchmarks/miss.py" ${MISS_ARGS:-} --json "$OUT/miss.json" 2>&1 | tail -10 || failed=1
  STEPS=${STEPS/miss/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,predict-first,* ]]; then
  python3 "$REPO/benchmarks/predict_first_call.py" --json "$OUT/predict-first.json" 2>&1 | tail -10 || failed=1
  STEPS=${STEPS/predict-first/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,verify,* ]]; then
  python3 "$REPO/benchmarks/verify_start.py" --json "$OUT/verify-start.json" 2>&1 | tail -10 || failed=1
  STEPS=${STEPS/verify/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,card-ranking,* ]]; then
  # the configs whose choice differed between runs of a speedup file (CARD_RANKING_FROM), timed on each GPU
  python3 "$REPO/benchmarks/card_ranking.py" --from "$REPO/$CARD_RANKING_FROM" --json "$OUT/card-ranking.json" 2>&1 | tail -30 || failed=1
  STEPS=${STEPS/card-ranking/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,hf,* ]]; then
  # HF_BASELINES=0: the captured and served runs alone (about half of each case's time), no plain runs beside
  baselines=$([[ ${HF_BASELINES:-1} == 0 ]] || echo --baselines)
  python3 "$REPO/benchmarks/hf_frames.py" --device cuda $baselines ${HF_ARGS:-} --out "$OUT/hf-frames.md" 2>&1 | tail -40 || failed=1
  STEPS=${STEPS/hf/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
if [[ ,$STEPS, == *,timing-noise,* ]]; then
  python3 "$REPO/benchmarks/timing_noise.py" ${TIMING_NOISE_ARGS:-} --json "$OUT/timing-noise.json" 2>&1 | tail -12 || failed=1
  STEPS=${STEPS/timing-noise/}; STEPS=${STEPS//,,/,}; STEPS=${STEPS#,}; STEPS=${STEPS%,}
fi
BENCH=${STEPS#tests}; BENCH=${BENCH#,}
if [[ -n $BENCH ]]; then
  python3 "$REPO/benchmarks/run.py" --steps "$BENCH" ${BENCH_ARGS:-} --json "$OUT/benchmarks.json" 2>&1 | tail -30 || failed=1
fi
exit $failed
