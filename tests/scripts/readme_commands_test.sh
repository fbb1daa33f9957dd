#!/usr/bin/env bash
# The documents' quick commands run as written: tests/scripts/readme_commands_test.sh BUILD_DIR [DOCS_ROOT]
#
# A code block of README.md or docs/*.md is tested when the line just before its
# opening ``` fence is exactly
#   <!-- test: quick -->
# Every line of such a block that starts with `./build/attn ` is run, in block
# order, by bash in a scratch folder whose ./build/attn is BUILD_DIR/attn (a
# symlink), so the command runs exactly as the document writes it. Files the
# commands write go to the scratch folder, which is removed at the end.
# Tag only commands that take under a minute: each gets 60 s.
#
# Fails when a command exits non-zero (or times out), when a tagged block holds
# no ./build/attn line, or when no tagged command is found at all.
# DOCS_ROOT (default: the source tree this script is in) is where README.md and
# docs/ are read from.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BUILD_DIR [DOCS_ROOT]" >&2; exit 2; }
BUILD=$(cd "$1" && pwd)
ROOT=$(cd "${2:-$(dirname "$0")/../..}" && pwd)
[ -x "$BUILD/attn" ] || { echo "readme_commands: $BUILD/attn not found" >&2; exit 1; }

SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/attn-readme-commands.XXXXXX")
trap 'rm -rf "$SCRATCH"' EXIT
mkdir "$SCRATCH/build"
ln -s "$BUILD/attn" "$SCRATCH/build/attn"

# FILE<TAB>LINE<TAB>COMMAND for every command of a tagged block; a tagged block
# without a command is reported as FILE<TAB>LINE<TAB>(none).
extract() {
  awk -v file="$1" '
    BEGIN { tagged = 0; in_block = 0; found = 0 }
    {
      line = $0
      sub(/\r$/, "", line)
      if (in_block) {
        if (line ~ /^[ \t]*```/) {
          if (!found) printf "%s\t%d\t(none)\n", file, start
          in_block = 0
        } else if (line ~ /^\.\/build\/attn /) {
          printf "%s\t%d\t%s\n", file, NR, line
          found = 1
        }
        next
      }
      if (line ~ /^[ \t]*```/) {
        if (tagged) { in_block = 1; found = 0; start = NR }
        else {  # an untagged block: skip to its end
          while ((getline l) > 0) { if (l ~ /^[ \t]*```/) break }
        }
        tagged = 0
        next
      }
      tagged = (line ~ /^[ \t]*<!--[ \t]*test:[ \t]*quick[ \t]*-->[ \t]*$/)
    }' "$ROOT/$1"
}

files=(README.md)
for f in "$ROOT"/docs/*.md; do files+=("docs/$(basename "$f")"); done

n=0
failed=0
for f in "${files[@]}"; do
  [ -f "$ROOT/$f" ] || continue
  while IFS=$'\t' read -r file line cmd; do
    if [ "$cmd" = "(none)" ]; then
      echo "FAIL $file:$line: a block tagged <!-- test: quick --> holds no ./build/attn command"
      failed=$((failed + 1))
      continue
    fi
    n=$((n + 1))
    log="$SCRATCH/cmd-$n.log"
    start=$SECONDS
    if (cd "$SCRATCH" && timeout 60 bash -c "$cmd") >"$log" 2>&1 </dev/null; then
      echo "ok   $file:$line ($((SECONDS - start)) s): $cmd"
    else
      rc=$?
      echo "FAIL $file:$line (exit $rc after $((SECONDS - start)) s): $cmd"
      tail -n 20 "$log" | sed 's/^/     | /'
      failed=$((failed + 1))
    fi
  done < <(extract "$f")
done

if [ "$n" -eq 0 ]; then
  echo "readme_commands: no command found in a block tagged <!-- test: quick --> of README.md or docs/*.md"
  exit 1
fi
if [ "$failed" -gt 0 ]; then
  echo "readme_commands: $failed of the documents' quick commands failed"
  exit 1
fi
echo "readme_commands: all $n of the documents' quick commands ran"
