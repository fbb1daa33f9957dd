#!/usr/bin/env bash
# The README's first command: install what is needed, build, then run the main
# job (scripts/translate-en-fr.sh): train a small English -> French model on
# the bundled Tatoeba pairs (~15 minutes on 2 cores), translate a few
# sentences and score the held-out test split.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== Installing dependencies (Debian packages) and building attn =="
bash scripts/install-deps.sh
ATTN_TARGETS=attn_cli bash scripts/build.sh  # the attn command only: the tests build with scripts/test.sh
echo
bash scripts/translate-en-fr.sh
