#!/usr/bin/env bash
# Issue 16's comparison of attention score functions (seed 004: "different
# styles may result in different performance") on Multi30k de->en: every row the
# same data, the same joint vocabulary (trained once, then vocab.src_model), the
# same recipe and the same training budget, one thread each, two rows side by side
# on a 2-core machine. BENCHMARKS.md, "Luong vs Bahdanau: the score functions".
#
#   bench/score_comparison.sh train ROW...   train the named rows (two at a time)
#   bench/score_comparison.sh report ROW...  score them: a table row each (markdown)
#
# Rows (name -> config and overrides; local windows use the general score as in
# Luong et al.'s best local model):
#   additive       configs/multi30k-rnnsearch.yaml (Bahdanau: GRU, additive score)
#   dot | general | concat                      configs/multi30k-luong.yaml, LSTM
#   local-m | local-p                           ... window local-m / local-p, general
#   gru-SCORE, gru-local-m, gru-local-p         ... the same with cell: gru
# Environment: MINUTES (training budget, default 15), OUT (default runs/scores),
# ATTN (default ./build/attn), MULTI30K (default data/multi30k).
set -euo pipefail
minutes=${MINUTES:-15}
out=${OUT:-runs/scores}
attn=${ATTN:-./build/attn}
data=${MULTI30K:-data/multi30k}

row_args() {  # row_args ROW -> the config and --set overrides of that row
  local row=$1 cell=lstm
  if [[ $row == gru-* && $row != gru-additive ]]; then cell=gru row=${row#gru-}; fi
  case $row in
    additive) echo "-c configs/multi30k-rnnsearch.yaml" ;;  # rnnsearch is GRU only
    dot | general | concat) echo "-c configs/multi30k-luong.yaml --set model.score=$row --set model.cell=$cell" ;;
    local-m | local-p)
      echo "-c configs/multi30k-luong.yaml --set model.score=general --set model.window=$row --set model.cell=$cell" ;;
    *) echo "unknown row '$1'" >&2; return 1 ;;
  esac
}

train_row() {  # train_row ROW: one thread, the shared vocabulary, MINUTES of training
  local row=$1 args
  args=$(row_args "$row")
  # shellcheck disable=SC2086  # args is a list of words
  "$attn" train $args --set "train.out_dir=$out/$row" --set train.threads=1 \
    --set "train.max_minutes=$minutes" --set "vocab.src_model=$out/vocab.model" \
    >"$out/$row.stdout" 2>"$out/$row.stderr"
}

train() {
  mkdir -p "$out"
  if [ ! -f "$out/vocab.model" ]; then  # the trainer's own settings: joint unigram, 8000 pieces
    "$attn" vocab -i "$data/train.de.gz" "$data/train.en.gz" -o "$out/vocab.model" --size 8000 --type unigram
  fi
  while [ $# -gt 0 ]; do
    train_row "$1" &
    if [ $# -gt 1 ]; then train_row "$2" & fi
    wait
    shift $(($# > 1 ? 2 : 1))
  done
}

json_field() { sed -E "s/.*\"$1\":([0-9.eE+-]+).*/\1/"; }

report_row() {  # report_row ROW -> one markdown table row
  local row=$1 run=$out/$1 params toks curve picked test stats
  params=$(sed -nE 's/.*: ([0-9]+) parameters.*/\1/p' "$run.stdout" | head -1)
  # mean target tokens/s over the run's train lines
  toks=$(grep '"type":"train"' "$run/log.jsonl" | json_field tgt_tokens_per_s |
    awk '{s += $1; n++} END {printf "%.0f", s / n}')
  # the best val BLEU (greedy, all of val, after each epoch) within 5 and 10 minutes of wall time, and at the end
  curve=$(grep '"type":"valid"' "$run/log.jsonl" | sed -E 's/.*"bleu":([0-9.]+).*"wall_s":([0-9.]+).*/\1 \2/' |
    awk '{b = $1 > b ? $1 : b; if ($2 <= 300) b5 = b; if ($2 <= 600) b10 = b; w = $2}
         END {printf "%.1f / %.1f / %.1f (%.1f min)", b5, b10, b, w / 60}')
  # the report's val-picked model and length penalty, and its test BLEU (kept: a rerun of the
  # report reuses it; training a row again starts a new run directory)
  [ -f "$run/report.txt" ] || EPOCH_TABLE=0 bash bench/multi30k_report.sh "$run" "$attn" >"$run/report.txt"
  picked=$(sed -nE 's/^Picked on val: (.*), beam 5, length penalty ([0-9.]+) \(val BLEU ([0-9.]+)\)/\1, lp \2, val \3/p' "$run/report.txt")
  test=$(sed -nE 's/^BLEU = ([0-9.]+) .*/\1/p' "$run/report.txt" | tail -1)
  # attention over the test set, beam 5, the best single model
  [ -f "$run/attention-stats.json" ] ||
    "$attn" translate -m "$run" -b 5 --batch 64 -i "$data/test_2016_flickr.de.gz" -o /dev/null \
      --attention-stats "$run/attention-stats.json" >/dev/null
  stats=$(cat "$run/attention-stats.json")
  printf '| %s | %.2fM | %s | %s | **%s** (%s) | %.3f | %.1f%% of %s |\n' "$row" \
    "$(awk "BEGIN{print $params/1e6}")" "$toks" "$curve" "$test" "$picked" "$(json_field mean_entropy <<<"$stats")" \
    "$(awk "BEGIN{print 100*$(json_field copy_argmax_share <<<"$stats")}")" "$(json_field copy_steps <<<"$stats")"
}

report() {
  echo "| row | parameters | tgt tok/s (1 thread) | best val BLEU within 5 / 10 min / at the end | test_2016_flickr BLEU, beam 5 (picked on val) | mean entropy (nats) | copy argmax |"
  echo "|---|---|---|---|---|---|---|"
  for row in "$@"; do report_row "$row"; done
}

cmd=${1:?usage: bench/score_comparison.sh train|report ROW...}
shift
case $cmd in
  train) train "$@" ;;
  report) report "$@" ;;
  *) echo "usage: bench/score_comparison.sh train|report ROW..." >&2; exit 2 ;;
esac
