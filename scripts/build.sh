#!/usr/bin/env bash
# Configures and builds attn (Release) into build/. Extra args go to cmake;
# ATTN_TARGETS limits the ninja targets (default: all, tests included).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
# shellcheck disable=SC2086  # ATTN_TARGETS is a space-separated list
ninja -C build -j "$(nproc)" ${ATTN_TARGETS:-}
