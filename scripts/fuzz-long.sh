#!/usr/bin/env bash
# A long run of one fuzz target: scripts/fuzz-long.sh TARGET SECONDS
# (TARGET without the fuzz_ prefix, e.g. safetensors). Builds build-fuzz/,
# then fuzzes with the seeds of fuzz/corpus/TARGET/ (read, never written) and a
# working corpus kept in build-fuzz/long/TARGET/corpus/ (grows across runs; not
# committed). Crashing inputs go to build-fuzz/long/TARGET/; the log is
# build-fuzz/long/TARGET/log, and its last lines (executions, coverage) are
# printed at the end. Exits non-zero when the fuzzer found a failure.
# FUZZ_SKIP_BUILD=1 runs the binary in build-fuzz/ as it is (e.g. while a
# rebuild is under way, or for several runs started at once).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -ne 2 ]; then
  echo "usage: scripts/fuzz-long.sh TARGET SECONDS" >&2
  exit 2
fi
t=$1
seconds=$2
if [ "${FUZZ_SKIP_BUILD:-0}" != 1 ]; then bash scripts/fuzz-build.sh; fi
dir=build-fuzz/long/$t
mkdir -p "$dir/corpus"
dict=()
if [ -f fuzz/dict/"$t".dict ]; then dict=(-dict=fuzz/dict/"$t".dict); fi
status=0
nice -n 10 ./build-fuzz/fuzz/fuzz_"$t" "$dir/corpus" fuzz/corpus/"$t" "${dict[@]}" \
  -max_total_time="$seconds" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
  -artifact_prefix="$dir/" >"$dir/log" 2>&1 || status=$?
echo "== fuzz_$t, $seconds s, $(date -u +%Y-%m-%dT%H:%MZ), exit $status"
grep -E '^#[0-9]+' "$dir/log" | tail -n 2
grep -E '^(stat::|Done|==[0-9]+==ERROR|SUMMARY)' "$dir/log" || true
exit $status
