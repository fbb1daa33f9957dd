#!/usr/bin/env bash
# A/B of two attn binaries on the same benchmark, alternated round by round so
# that a change in the machine's speed moves both sides (BENCHMARKS.md).
#   bench/ab.sh OLD_BINARY NEW_BINARY ROUNDS [attn bench arguments...]
# e.g. bench/ab.sh /tmp/attn-old/bin/attn build/attn 3 train decode --no-peers --threads 2
# OLD is an installed build (cmake --install BUILD --prefix /tmp/attn-old), not a
# copy of BUILD/attn: libattn is a shared library, and a copied build-tree binary
# would load the build tree's current libattn.so through its RUNPATH.
# Prints each JSON line of `attn bench` with "ab": "old" / "new" and "round": k added.
set -euo pipefail
old=$1 new=$2 rounds=$3
shift 3
for ((k = 1; k <= rounds; ++k)); do
  for side in old new; do
    bin=$old
    [ "$side" = new ] && bin=$new
    "$bin" bench "$@" | sed "s/^{/{\"ab\":\"$side\",\"round\":$k,/"
  done
done
