#!/usr/bin/env bash
# CI smoke run of every fuzz target (fuzz/README.md): builds build-fuzz/ (or
# takes the targets of FUZZ_BUILD_DIR, e.g. build-asan/, which
# scripts/test-sanitizers.sh builds with ATTN_FUZZ on), then
# runs each target for FUZZ_SECONDS (default 30), one per core at a time, on a
# scratch copy of its seed corpus (fuzz/corpus/<target>/, with
# fuzz/dict/<target>.dict when present). Fails on any crash, leak, timeout or
# out-of-memory, leaving the crashing input in the scratch directory it names.
# Prints each target's executions and the total time.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-30}
start=$(date +%s)
fuzz_dir=${FUZZ_BUILD_DIR:-build-fuzz}
if [ -z "${FUZZ_BUILD_DIR:-}" ]; then bash scripts/fuzz-build.sh; fi
built=$(date +%s)
echo "fuzz-smoke: build $((built - start)) s"
scratch=$(mktemp -d /tmp/attn-fuzz-smoke.XXXXXX)
targets=$(sed -n 's/^set(ATTN_FUZZ_TARGETS \(.*\))$/\1/p' fuzz/CMakeLists.txt)

# smoke <target>: one run; its report goes to $scratch/<target>/result
smoke() {
  local t=$1 dict=() log=$scratch/$1/log
  mkdir -p "$scratch/$t/corpus" "$scratch/$t/artifacts"
  cp fuzz/corpus/"$t"/* "$scratch/$t/corpus/"
  if [ -f fuzz/dict/"$t".dict ]; then dict=(-dict=fuzz/dict/"$t".dict); fi
  # -timeout: one input may take at most 30 s (a shared, loaded machine stalled a 57 ms input for 11 s); -rss_limit_mb: memory per process
  if ! ASAN_OPTIONS=detect_leaks=1 ./"$fuzz_dir"/fuzz/fuzz_"$t" "$scratch/$t/corpus" "${dict[@]}" \
      -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$scratch/$t/artifacts/" >"$log" 2>&1; then
    { tail -n 40 "$log"; echo "fuzz-smoke: fuzz_$t FAILED; the input is in $scratch/$t/artifacts/"; } >"$scratch/$t/result"
    return 1
  fi
  local execs cov
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -n 1)
  echo "fuzz-smoke: fuzz_$t ok: $execs executions in $seconds s ($cov)" >"$scratch/$t/result"
}

# One target per core at a time (each fuzzer is one process, one thread).
jobs_max=$(nproc)
pids=()
names=()
failed=0
for t in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do wait -n || true; done
  smoke "$t" &
  pids+=($!)
  names+=("$t")
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed=1
  cat "$scratch/${names[$i]}/result"
done
if [ "$failed" != 0 ]; then
  echo "fuzz-smoke: a target failed (above); total $(( $(date +%s) - start )) s" >&2
  exit 1
fi
rm -rf "$scratch"
echo "fuzz-smoke: all targets passed; total $(( $(date +%s) - start )) s"
