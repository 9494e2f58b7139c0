#!/usr/bin/env bash
# A capture on a GPU machine whose Inductor cache is warm from a plain run (no tuned-kernels), then the bundle
# served in a fresh process with empty caches: each run's JSON line (tests/corpora/inductor_model.py) into
# $OUT/warm-capture.jsonl. Run after ci/gpu_run.sh's setup (the wheel installed): MODEL and MODE pick the model.
set -uo pipefail
REPO=${REPO:-$(pwd)}; OUT=${OUT:-/tmp/out}; MODEL=${MODEL:-bmm-decoder}; MODE=${MODE:-max-autotune-no-cudagraphs}
APP="$REPO/tests/corpora/inductor_model.py"
work=$(mktemp -d); cd "$work" || exit 1
users="$work/users-inductor"
line() { grep '^{' | tail -1 | python3 -c "import json,sys; d=json.loads(sys.stdin.read()); d['run']='$1'; print(json.dumps(d))"; }
TORCHINDUCTOR_CACHE_DIR=$users python3 "$APP" "$MODEL" "$MODE" | line plain >> "$OUT/warm-capture.jsonl"
TORCHINDUCTOR_CACHE_DIR=$users python3 -m tuned_kernels capture -o "$work/warm.pb.zst" -- python3 "$APP" "$MODEL" "$MODE" \
  | line "capture, warm cache" >> "$OUT/warm-capture.jsonl"
TORCHINDUCTOR_CACHE_DIR=$work/fresh TRITON_CACHE_DIR=$work/fresh-triton TUNED_KERNELS_CACHE_DIR=$work/overlay \
  TUNED_KERNELS=1 TUNED_KERNELS_PATH=$work/warm.pb.zst python3 "$APP" "$MODEL" "$MODE" | line "served" >> "$OUT/warm-capture.jsonl"
python3 -m tuned_kernels inspect "$work/warm.pb.zst" | head -8
cat "$OUT/warm-capture.jsonl"
