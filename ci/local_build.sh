#!/usr/bin/env bash
# The bundle workflow's steps (ci/workflows/build-bundles.yml), run locally on this machine's target (the
# cpu target through Triton's interpreter where there is no GPU): detect, two tuning shards, merge,
# wheel (signed with BUNDLE_SIGNING_KEY, a key's PEM text, where set), index. The tests run it end to end.
# Usage: ci/local_build.sh OUTDIR [TARGET]
set -euo pipefail
OUT=${1:?usage: ci/local_build.sh OUTDIR [TARGET]}
TARGET=${2:-cpu}
TK="${PYTHON:-python3} -m tuned_kernels"
mkdir -p "$OUT" "$OUT/seeds"  # the workflow's seeds step makes it, empty unless seeding
$TK detect --expect "$TARGET"
for shard in 0/2 1/2; do  # the matrix's tune jobs
  $TK tune --shapes quick --shard "$shard" --seed-from "$OUT/seeds" -o "$OUT/part-${shard%/*}.pb.zst"
done
$TK merge "$OUT"/part-*.pb.zst -o "$OUT/$TARGET.pb.zst"  # the wheel job
if [[ -n ${BUNDLE_SIGNING_KEY:-} ]]; then  # the workflow's secret: the bundle signed with it
  key="$OUT/bundle-signing.key"
  trap 'rm -f "$key"' EXIT  # gone however the build ends
  (umask 077 && printf '%s\n' "$BUNDLE_SIGNING_KEY" > "$key")
  $TK build-wheel "$OUT/$TARGET.pb.zst" -o "$OUT/dist" --sign-key "$key"
  rm -f "$key"
else
  $TK build-wheel "$OUT/$TARGET.pb.zst" -o "$OUT/dist"
fi
$TK index "$OUT/dist" -o "$OUT/simple"  # the publish job
$TK inspect "$OUT/$TARGET.pb.zst" > "$OUT/inspect.txt" && sed -n 1,4p "$OUT/inspect.txt"
