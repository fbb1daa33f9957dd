#!/usr/bin/env bash
# The quick start's job, on an already built ./build/attn:
#   1. train English -> French (configs/tatoeba-en-fra.yaml) into runs/quickstart
#   2. translate a few fixed sentences, printed as "source -> translation"
#   3. translate the held-out test split with beam 5 and print BLEU and chrF
#   4. draw the attention of "he doesn't like apples" (a heatmap) and the training curves
#
# runs/quickstart is kept between runs:
#   - a finished run there is reused: steps 2 and 3 run on its model
#     (delete the folder to train a new one);
#   - an interrupted run (Ctrl-C during training) is continued where it stopped;
#   - anything else (no folder, or a run killed before its first checkpoint) trains from scratch.
#
# Arguments, if any, are config overrides passed to `attn train --set`, e.g.
#   bash scripts/translate-en-fr.sh train.max_minutes=30
# (the run directory stays runs/quickstart).
set -euo pipefail
cd "$(dirname "$0")/.."
{ # read whole before running: editing or updating this file during a run must not change the run
ATTN=./build/attn
CONFIG=configs/tatoeba-en-fra.yaml
RUN=runs/quickstart  # = train.out_dir in $CONFIG
# None of these is in the data (as written, ignoring case), so the model has not seen them.
# The first two differ only in case and full stop: the data's sentences all start with a
# capital and end with punctuation; the config's casual copies (data.casual_source_share)
# teach the model the lower-case, unpunctuated form too (BENCHMARKS.md, "Quick start").
SENTENCES=(
  "he doesn't like apples"
  "He doesn't like apples."
  "Where is the train station?"
  "My sister lives in Paris."
  "We are going to the beach tomorrow."
  "The cat is sleeping on the bed."
)

SETS=()
for kv in "$@"; do
  case "$kv" in
    train.out_dir=*) echo "translate-en-fr: the run directory is fixed ($RUN)" >&2; exit 2 ;;
    *=*) SETS+=(--set "$kv") ;;
    *) echo "translate-en-fr: expected section.key=value, got '$kv'" >&2; exit 2 ;;
  esac
done
[ -x "$ATTN" ] || { echo "translate-en-fr: $ATTN not found; build first (bash scripts/build.sh)" >&2; exit 1; }
start=$SECONDS
elapsed() { printf '%dm%02ds' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)); }
say() { printf '\n== %s ==\n' "$*"; }
source scripts/lib/run.sh  # run CMD: echo it (on stderr), then run it

minutes=$(sed -n 's/^ *max_minutes: *\([0-9.]*\).*/\1/p' "$CONFIG")
for kv in "$@"; do case "$kv" in train.max_minutes=*) minutes=${kv#*=} ;; esac; done
cat <<INTRO
attn quick start: English -> French translation
  data:  142,787 English-French sentence pairs from the Tatoeba Project (CC BY 2.0),
         bundled in data/tatoeba-eng-fra/; attribution: www.manythings.org/anki and tatoeba.org
  model: RNNsearch (Bahdanau et al. 2015): bidirectional GRU encoder, additive attention,
         GRU decoder, over SentencePiece subword pieces
  plan:  1. train for $minutes minutes (with validation and testing the job takes ~15 minutes on 2 cores)
         2. translate a few sentences
         3. translate 2000 held-out English sentences (never seen in training) and score them
         4. draw the attention of one sentence and the training curves
INTRO

say "1/4 Training (config $CONFIG, run directory $RUN)"
if [ -f "$RUN/model.safetensors" ] && tail -n 1 "$RUN/log.jsonl" 2>/dev/null | grep -q '"type":"finished"'; then
  echo "$RUN holds a finished run: reusing its model (delete $RUN to train a new one)."
elif [ -f "$RUN/checkpoint/trainer_state.json" ] || [ -f "$RUN/checkpoint.prev/trainer_state.json" ]; then  # .prev: a save was killed
  echo "$RUN holds an interrupted run: continuing it from its last checkpoint."
  run "$ATTN" train -c "$CONFIG" ${SETS[@]+"${SETS[@]}"} --resume
else
  echo "Each 'step' line is one batch; 'valid' lines score the model on held-out sentences"
  echo "(perplexity: lower is better; BLEU 0-100: higher is better). Ctrl-C stops and keeps a"
  echo "checkpoint: running this script again continues from it."
  echo
  run "$ATTN" train -c "$CONFIG" ${SETS[@]+"${SETS[@]}"}
fi

say "2/4 Translating sentences that are not in the data (beam search, beam 5)"
printf '%s\n' "${SENTENCES[@]}" >"$RUN/examples.en"
run "$ATTN" translate -m "$RUN" -b 5 -i "$RUN/examples.en" -o "$RUN/examples.fr"
mapfile -t hyps <"$RUN/examples.fr"
for i in "${!SENTENCES[@]}"; do
  printf '  %-45s -> %s\n' "${SENTENCES[$i]}" "${hyps[$i]}"
done

say "3/4 Translating the test split and scoring it against the reference translations"
echo "$(sort -u "$RUN/test.src" | wc -l) English sentences, $(wc -l <"$RUN/test.src") pairs (one line per French reference)"
run "$ATTN" translate -m "$RUN" -b 5 -i "$RUN/test.src" -o "$RUN/test.hyp"
echo
echo "Three of them, short to long (the split keeps the data's order):"
for n in 500 1500 2500; do
  [ "$n" -le "$(wc -l <"$RUN/test.src")" ] || continue
  printf '  English:   %s\n  reference: %s\n  attn:      %s\n\n' "$(sed -n "${n}p" "$RUN/test.src")" \
    "$(sed -n "${n}p" "$RUN/test.ref")" "$(sed -n "${n}p" "$RUN/test.hyp")"
done
echo "BLEU (word n-gram overlap with the references) and chrF (character n-grams), 0-100,"
echo "higher is better; one French reference per line, so a correct paraphrase still loses points:"
run "$ATTN" score -r "$RUN/test.ref" --hyp "$RUN/test.hyp"

say "4/4 Seeing the attention"
echo "How the model attends to the source while it writes each French piece (beam 5; rows:"
echo "French pieces, columns: English pieces, white = weight 1), and its training curves:"
run "$ATTN" explain -m "$RUN" -b 5 --format json --heatmap "$RUN/heatmap.png" <<<"${SENTENCES[0]}" >"$RUN/explain.json"
run "$ATTN" plot "$RUN" -o "$RUN/curves.png"
echo "  heatmap:        $RUN/heatmap.png"
echo "  training curves: $RUN/curves.png"
echo "  every number of each decoder step: $RUN/explain.json (as a table: echo \"${SENTENCES[0]}\" | $ATTN explain -m $RUN)"

say "Done: the job took $(elapsed)"
cat <<EOF2
Translate your own sentences:
  echo "The weather is nice today." | $ATTN translate -m $RUN
Test translations: $RUN/test.hyp (sources $RUN/test.src, references $RUN/test.ref).
Attention learning a toy task in a minute, with the source word each output word attended to: $ATTN demo
EOF2
exit
}
