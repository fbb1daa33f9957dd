#!/usr/bin/env bash
# Configures and builds attn (Release) into build/. Extra args go to cmake;
# ATTN_TARGETS limits the ninja targets (default: all, tests included).
# ccache is used when installed (CCACHE_DISABLE=1 times a cold build).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
# shellcheck disable=SC2086  # ATTN_TARGETS is a space-separated list
ninja -C build -j "$(nproc)" ${ATTN_TARGETS:-}
