#!/usr/bin/env bash
# scripts/get-multi30k.sh against a local copy (no network): good files are
# installed and verified; a corrupted file is refused by name and never
# installed; a corrupted file already in place is replaced by a good copy.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src"
for f in train.de.gz train.en.gz val.de.gz; do printf 'line of %s\n' "$f" | gzip -n >"$work/src/$f"; done
(cd "$work/src" && sha256sum train.de.gz train.en.gz val.de.gz) >"$work/SHA256SUMS"
run() { MULTI30K_DIR="$work/dest" MULTI30K_SUMS="$work/SHA256SUMS" MULTI30K_LOCAL="$work/src" MULTI30K_OFFLINE=1 \
          bash "$repo/scripts/get-multi30k.sh"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. a corrupted source file: exit 1, the file named, not installed
printf 'x' >>"$work/src/train.en.gz"
if out=$(run 2>&1); then fail "a corrupted file was accepted: $out"; fi
grep -q "train.en.gz" <<<"$out" || fail "the message does not name the file: $out"
grep -q "SHA-256" <<<"$out" || fail "the message does not say the sum differs: $out"
[[ ! -e $work/dest/train.en.gz ]] || fail "the corrupted file was installed"

# 2. good files: all installed, byte for byte
(cd "$work/src" && printf 'line of %s\n' train.en.gz | gzip -n >train.en.gz)
out=$(run 2>&1) || fail "good files refused: $out"
for f in train.de.gz train.en.gz val.de.gz; do cmp -s "$work/src/$f" "$work/dest/$f" || fail "$f differs"; done
grep -q "all SHA-256 sums verified" <<<"$out" || fail "unexpected summary: $out"

# 3. a file corrupted in place is fetched again; good ones are kept
printf 'x' >>"$work/dest/val.de.gz"
out=$(run 2>&1) || fail "repair failed: $out"
cmp -s "$work/src/val.de.gz" "$work/dest/val.de.gz" || fail "val.de.gz not repaired"
grep -q "1 file(s) installed, 2 already in place" <<<"$out" || fail "unexpected summary: $out"
echo "get-multi30k: corrupted source refused, good files installed, corrupted copy repaired"
