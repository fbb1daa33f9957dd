#!/usr/bin/env bash
# The README's second command (and CI's): install, build, run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
cd build
# 2 test processes: the parity tests spend most of their time starting python.
# Passive OpenMP waits: two test processes share 2 cores, and spinning
# workers would steal the core a peer thread needs to reach the barrier.
OMP_WAIT_POLICY=passive ctest --output-on-failure -j 2 --timeout 900
