#!/usr/bin/env bash
# Puts Multi30k (WMT16 multimodal task 1, raw text: train, val, test_2016_flickr
# in de, en, fr) into data/multi30k/ and checks every file against the SHA-256
# sums kept in the repository (data/multi30k/SHA256SUMS).
#
# Where the files come from, first that exists:
#   1. a local copy: $MULTI30K_LOCAL, default ../shared/data/multi30k (works
#      without a network);
#   2. the Multi30k project's public repository, github.com/multi30k/dataset,
#      at a fixed commit, data/task1/raw/ (curl).
# A file already in place with the right sum is kept. A file whose sum differs
# (corrupted, truncated, another release) is refused: nothing is moved into
# place, the script names the file and exits 1.
#
# Environment (for tests): MULTI30K_DIR the destination (default data/multi30k),
# MULTI30K_SUMS the sums file (default data/multi30k/SHA256SUMS),
# MULTI30K_OFFLINE=1 never downloads.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${MULTI30K_DIR:-data/multi30k}
sums=${MULTI30K_SUMS:-data/multi30k/SHA256SUMS}
local_copy=${MULTI30K_LOCAL:-../shared/data/multi30k}
commit=a3d2e0d26b56f3846f66a952536ffed4e401d05a
url=https://raw.githubusercontent.com/multi30k/dataset/$commit/data/task1/raw

[[ -r $sums ]] || { echo "get-multi30k: $sums: cannot read the SHA-256 sums" >&2; exit 1; }
mkdir -p "$dest"
tmp=$(mktemp -d "$dest/.get-multi30k.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

sha() { sha256sum "$1" | cut -d' ' -f1; }

fetched=0 kept=0
while read -r want name; do
  [[ -n ${name:-} ]] || continue
  if [[ -f $dest/$name && $(sha "$dest/$name") == "$want" ]]; then
    kept=$((kept + 1))
    continue
  fi
  if [[ -f $local_copy/$name ]]; then
    from="$local_copy/$name"
    cp "$from" "$tmp/$name"
  elif [[ ${MULTI30K_OFFLINE:-0} == 1 ]]; then
    echo "get-multi30k: $name: not in $local_copy and downloads are off (MULTI30K_OFFLINE=1)" >&2
    exit 1
  else
    from="$url/$name"
    curl -fsSL --retry 3 -o "$tmp/$name" "$from" ||
      { echo "get-multi30k: $name: download from $from failed" >&2; exit 1; }
  fi
  got=$(sha "$tmp/$name")
  if [[ $got != "$want" ]]; then
    echo "get-multi30k: $name (from $from): SHA-256 $got, expected $want: corrupted or not the Multi30k release; not installed" >&2
    exit 1
  fi
  mv "$tmp/$name" "$dest/$name"
  fetched=$((fetched + 1))
done <"$sums"
echo "get-multi30k: $dest: $fetched file(s) installed, $kept already in place, all SHA-256 sums verified"
