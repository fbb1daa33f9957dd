#!/usr/bin/env bash
# CI smoke run of every fuzz target (fuzz/README.md): builds build-fuzz/, then
# runs each target for FUZZ_SECONDS (default 30) on a scratch copy of its seed
# corpus (fuzz/corpus/<target>/, with fuzz/dict/<target>.dict when present).
# Fails on the first crash, leak, timeout or out-of-memory, leaving the
# crashing input in the scratch directory it names. Prints each target's
# executions and the total time.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
start=$(date +%s)
bash scripts/fuzz-build.sh
built=$(date +%s)
echo "fuzz-smoke: build $((built - start)) s"
scratch=$(mktemp -d /tmp/attn-fuzz-smoke.XXXXXX)
targets=$(sed -n 's/^set(ATTN_FUZZ_TARGETS \(.*\))$/\1/p' fuzz/CMakeLists.txt)
for t in $targets; do
  mkdir -p "$scratch/$t/corpus" "$scratch/$t/artifacts"
  cp fuzz/corpus/"$t"/* "$scratch/$t/corpus/"
  dict=()
  if [ -f fuzz/dict/"$t".dict ]; then dict=(-dict=fuzz/dict/"$t".dict); fi
  log=$scratch/$t/log
  # -timeout: one input may take at most 30 s (a shared, loaded machine stalled a 57 ms input for 11 s); -rss_limit_mb: memory per process
  if ! ASAN_OPTIONS=detect_leaks=1 ./build-fuzz/fuzz/fuzz_"$t" "$scratch/$t/corpus" "${dict[@]}" \
      -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$scratch/$t/artifacts/" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz-smoke: fuzz_$t FAILED; the input is in $scratch/$t/artifacts/" >&2
    exit 1
  fi
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  echo "fuzz-smoke: fuzz_$t ok: $execs executions in $seconds s ($cov)"
done
rm -rf "$scratch"
echo "fuzz-smoke: all targets passed; total $(( $(date +%s) - start )) s"
