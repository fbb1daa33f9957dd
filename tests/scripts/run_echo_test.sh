#!/usr/bin/env bash
# scripts/lib/run.sh: a command's output redirected to a file is that output
# alone (the echoed "$ command" goes to stderr), so the quick start's
# explain.json is JSON that a reader opens.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../../scripts/lib/run.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
run printf '{"steps": [1, 2]}\n' >"$tmp/out.json" 2>"$tmp/err"
/usr/bin/python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out.json"
grep -qx '$ printf {"steps": \[1, 2\]}\\n' "$tmp/err" || { echo "the command was not echoed on stderr:"; cat "$tmp/err"; exit 1; }
# the quick start's scripts source it rather than defining their own
if grep -n '^run() ' "$here"/../../scripts/*.sh; then echo "a script defines its own run()"; exit 1; fi
echo "run.sh: output file is the command's output alone"
