#!/usr/bin/env bash
# Data-parallel training throughput (BENCHMARKS.md, "Data-parallel training"):
# `attn train` for a fixed number of steps as 1 process of 1 thread, 2 ranks of
# 1 thread (mpirun), 1 process of 2 threads, and 2 ranks with one gradient
# bucket (its sum starts after the backward pass: no overlap), alternated
# round by round so that a change in the machine's speed moves every side.
#   bench/data_parallel.sh CONFIG STEPS ROUNDS > results.jsonl
# e.g. bench/data_parallel.sh configs/multi30k-transformer.yaml 40 2
# The config's data paths are read as given (run from the repository root, or
# pass --set data.* through EXTRA). Prints one JSON line per run: the side, the
# round, target tokens/s over the run's steps (validation excluded; rank 0's
# clock, the global batch's tokens), and for 2 ranks the time per step rank 0
# waited for the gradient sums after its backward pass, and its step time.
set -euo pipefail
config=$1 steps=$2 rounds=$3
attn=${ATTN:-build/attn}
read -r -a extra <<<"${EXTRA:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=()
if [ "$(id -u)" = 0 ]; then root=(--allow-run-as-root); fi  # a container's root: nothing to protect

# One vocabulary for every run (the first run trains it; SentencePiece is not what is measured)
"$attn" train -c "$config" "${extra[@]}" --set "train.out_dir=$work/vocab" --stop-after-steps 1 >/dev/null || true
vocab=(--set "vocab.src_model=$work/vocab/vocab.src.model" --set "vocab.tgt_model=$work/vocab/vocab.tgt.model")

run() {  # run SIDE ROUND LAUNCHER... -- THREADS BUCKET_MB
  local side=$1 k=$2
  shift 2
  local launcher=()
  while [ "$1" != -- ]; do launcher+=("$1"); shift; done
  local threads=$2 bucket=$3 dir=$work/$side-$k load
  load=$(cut -d' ' -f1 /proc/loadavg)
  "${launcher[@]}" "$attn" train -c "$config" "${extra[@]}" "${vocab[@]}" --set "train.out_dir=$dir" \
    --set "train.threads=$threads" --set "train.dist_bucket_mb=$bucket" --set train.log_every=1000000 \
    --set train.checkpoint_minutes=0 --stop-after-steps "$steps" >"$work/out" 2>&1 || { cat "$work/out" >&2; exit 1; }
  local tps wait step
  tps=$(sed -n 's/.*this run \([0-9.]*\) tgt tok\/s.*/\1/p' "$work/out")
  wait=$(sed -n 's/.*: \([0-9.]*\) ms per step waited.*/\1/p' "$work/out")
  step=$(sed -n "s/.*of rank 0's \([0-9.]*\) ms step.*/\1/p" "$work/out")
  echo "{\"side\":\"$side\",\"round\":$k,\"steps\":$steps,\"threads\":$threads,\"tgt_tokens_per_s\":$tps,\"wait_ms_per_step\":${wait:-null},\"rank0_step_ms\":${step:-null},\"load_before\":$load}"
}

for ((k = 1; k <= rounds; ++k)); do
  run 1x1 "$k" -- 1 8
  run 2x1 "$k" mpirun "${root[@]}" -np 2 -- 1 8
  run 1x2 "$k" -- 2 8
  run 2x1-one-bucket "$k" mpirun "${root[@]}" -np 2 -- 1 100000
done
