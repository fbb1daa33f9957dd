#!/usr/bin/env bash
# Scores a finished Multi30k run (configs/multi30k-rnnsearch.yaml with
# train.snapshots: true) the way BENCHMARKS.md reports it (every epoch: bench/results/HISTORY.md):
#   1. every epoch's snapshot: wall time, val BLEU (from the run's log), test_2016_flickr
#      BLEU greedy and beam 5;
#   2. the beam-5 length penalty chosen on val (never on test) for the best model;
#   3. checkpoint averaging of the newest 3 and 5 snapshots, chosen on val;
#   4. the final test BLEU of the model and settings val picked.
# Usage: bench/multi30k_report.sh RUN_DIR [ATTN_BINARY]   (from the project root)
# EPOCH_TABLE=0 skips step 1 (two test translations per epoch; steps 2-4 take a few minutes).
# BEAM_STOP=top-ended scores with OpenNMT's stopping rule (the searches' default before
# 2026-11-28, with which the earlier figures in BENCHMARKS.md were made); default complete.
set -euo pipefail
run=${1:?usage: bench/multi30k_report.sh RUN_DIR [ATTN_BINARY]}
attn=${2:-./build/attn}
data=${MULTI30K:-data/multi30k}  # scripts/get-multi30k.sh puts it there
stop=${BEAM_STOP:-complete}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

bleu() {  # bleu WEIGHTS SPLIT BEAM LP -> BLEU of that split's translation
  local weights=$1 split=$2 beam=$3 lp=$4
  "$attn" translate -m "$run" --weights "$weights" -b "$beam" --beam-stop "$stop" --length-penalty "$lp" --batch 64 \
    -i "$data/$split.de.gz" -o "$tmp/hyp" >/dev/null
  "$attn" score -r "$data/$split.en.gz" --hyp "$tmp/hyp" --json | sed -E 's/.*"bleu":([0-9.]+).*/\1/' |
    xargs printf '%.2f'
}

if [ "${EPOCH_TABLE:-1}" = 1 ]; then
  echo "| epoch | step | wall min | train min | val BLEU (greedy, log) | test greedy | test beam 5 |"
  echo "|---|---|---|---|---|---|---|"
  epoch=0
  for snap in "$run"/snapshots/step-*.safetensors; do
    epoch=$((epoch + 1))
    step=$((10#$(basename "$snap" .safetensors | sed 's/step-//')))
    line=$(grep "\"type\":\"valid\",\"step\":$step," "$run/log.jsonl" | tail -1)
    wall=$(sed -E 's/.*"wall_s":([0-9.]+).*/\1/' <<<"$line")
    train=$(sed -E 's/.*"elapsed_s":([0-9.]+).*/\1/' <<<"$line")
    vbleu=$(sed -E 's/.*"bleu":([0-9.]+).*/\1/' <<<"$line")
    printf '| %d | %d | %.1f | %.1f | %.2f | %s | %s |\n' "$epoch" "$step" "$(awk "BEGIN{print $wall/60}")" \
      "$(awk "BEGIN{print $train/60}")" "$vbleu" "$(bleu "$snap" test_2016_flickr 1 1.0)" "$(bleu "$snap" test_2016_flickr 5 1.0)"
  done
  echo
fi
echo "Length penalty for beam 5 (--beam-stop $stop), chosen on val with the best model (model.safetensors):"
best_lp=1.0 best=0
for lp in 0.6 0.8 1.0 1.2 1.4 1.7 2.0; do
  b=$(bleu "$run/model.safetensors" val 5 "$lp")
  echo "  lp $lp: val BLEU $b"
  if awk "BEGIN{exit !($b > $best)}"; then best=$b best_lp=$lp; fi
done
pick="$run/model.safetensors" pick_name="best single model"
for n in 3 5; do
  "$attn" average -m "$run" --last "$n" >/dev/null
  b=$(bleu "$run/model.avg$n.safetensors" val 5 "$best_lp")
  echo "  average of the newest $n snapshots, lp $best_lp: val BLEU $b"
  if awk "BEGIN{exit !($b > $best)}"; then best=$b pick="$run/model.avg$n.safetensors" pick_name="average of newest $n"; fi
done
echo
echo "Picked on val: $pick_name, beam 5, length penalty $best_lp (val BLEU $best)"
"$attn" translate -m "$run" --weights "$pick" -b 5 --beam-stop "$stop" --length-penalty "$best_lp" --batch 64 \
  -i "$data/test_2016_flickr.de.gz" -o "$tmp/hyp" >/dev/null
echo "test_2016_flickr:"
"$attn" score -r "$data/test_2016_flickr.en.gz" --hyp "$tmp/hyp"
