#!/usr/bin/env bash
# Issue 15's figures (BENCHMARKS.md, "Captioning"): the generated scenes, the
# three captioners (soft attention, hard attention, no attention) trained with
# their committed configs, each scored on the test split by `attn caption eval`
# (all images, then 1, 2 and 3 objects), and the attention figures of docs/captioning.md.
#   bash scripts/caption-figures.sh [soft|hard|noattn]...   (default: all three)
#   SCORE_ONLY=1 bash scripts/caption-figures.sh soft      (score an existing run, no training)
# Every training run stops at its config's train.max_minutes (25); the run
# directories are runs/caption-<kind>, the JSON lines go to
# bench/results/caption-<date>.jsonl with the run, the CPU and the training time.
# Takes about 80 minutes on 2 cores (three runs of 25 minutes, data, scoring); the
# configs train on one thread, so two kinds can run side by side (two invocations).
set -euo pipefail
cd "$(dirname "$0")/.."
attn=${ATTN:-./build/attn}  # ATTN: another build of attn (e.g. a copy, while build/ is rebuilt)
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=(soft hard noattn)
out=bench/results/caption-$(date -u +%Y-%m-%d).jsonl
cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
mkdir -p bench/results
if [ ! -f runs/scenes/dataset_shapes.json ]; then
  "$attn" caption data --out runs/scenes --count 10000 --seed 1
fi
for kind in "${kinds[@]}"; do
  run=runs/caption-$kind
  if [ -z "${SCORE_ONLY:-}" ]; then
    rm -rf "$run"
    "$attn" train -c "configs/caption-$kind.yaml"
  fi
  # the training time and steps of the run, from its log
  finished=$(grep '"type":"finished"' "$run/log.jsonl" | tail -n 1)
  # localisation over every word of an object (size, colour, shape), then over the shape words alone
  for words in all shape; do
    "$attn" caption eval -m "$run" --captions runs/scenes/dataset_shapes.json --split test --threads 2 \
      $([ "$words" = shape ] && echo --shape-words-only) |
      while IFS= read -r line; do
        echo "{\"run\":\"$kind\",\"cpu\":\"$cpu\",\"date\":\"$(date -u +%FT%TZ)\",\"localised_words\":\"$words\",\"finished\":$finished,\"eval\":$line}"
      done | tee -a "$out"
  done
done
# The figures of docs/captioning.md: one test image with three objects, soft and hard attention over it
image=$(/usr/bin/python3 -c '
import json
d = json.load(open("runs/scenes/dataset_shapes.json"))
print(next("runs/scenes/images/" + i["filename"] for i in d["images"] if i["split"] == "test" and len(i["objects"]) == 3))')
for kind in soft hard; do
  if [ -d "runs/caption-$kind" ]; then
    "$attn" caption -m "runs/caption-$kind" "$image" --attention "docs/img/caption-$kind" \
      $([ "$kind" = hard ] && echo --upsample nearest)
    rm -f docs/img/caption-$kind/*.[0-9][0-9].png  # docs/captioning.md shows the strip; the per-word files repeat its panels
  fi
done
