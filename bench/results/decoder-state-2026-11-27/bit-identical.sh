#!/usr/bin/env bash
# bit-identical check: OLD and NEW attn binaries, the two demo runs
set -u
old=$1 new=$2 out=/tmp/ds-check
for run in ${RUNS:-rnn luong}; do
  m=/tmp/ds-demo-$run/run
  in=$out/input-$run.en
  cat /tmp/ds-demo-$run/data/valid.en /tmp/ds-demo-$run/data/train.en | head -400 > $in
  for side in old new; do
    bin=$old; [ $side = new ] && bin=$new
    for b in 1 5; do
      for th in 1 2; do
        nice -n 19 $bin translate -m $m -i $in -b $b --threads $th --alignments soft > $out/$run-$side-b$b-t$th.txt 2>/dev/null
      done
    done
    nice -n 19 $bin translate -m $m -i $in -b 5 -n 3 --threads 2 > $out/$run-$side-n3.txt 2>/dev/null
    head -20 $in | nice -n 19 $bin explain -m $m --format json --threads 2 > $out/$run-$side-explain.json 2>/dev/null
    head -20 $in | nice -n 19 $bin explain -m $m --format json -b 5 --threads 2 > $out/$run-$side-explain-b5.json 2>/dev/null
  done
  for f in $out/$run-old-*; do
    g=${f/-old-/-new-}
    if cmp -s $f $g; then echo "identical $(basename $f) $(wc -l < $f) lines"; else echo "DIFFER $(basename $f)"; fi
  done
done
