#!/usr/bin/env bash
# Configures and builds attn (Release) into build/. Extra args go to cmake;
# ATTN_TARGETS limits the ninja targets (default: all, tests included).
# ccache is used when installed (CCACHE_DISABLE=1 times a cold build).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # The files that use a precompiled header (the tests, the command's, the server's) are
  # cached only with these: without them ccache compiles them every time ("could not use
  # precompiled header"). The precompiled header is in the compile's inputs all the same.
  export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
fi
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@" >/dev/null
# shellcheck disable=SC2086  # ATTN_TARGETS is a space-separated list
ninja -C build -j "$(nproc)" ${ATTN_TARGETS:-}
