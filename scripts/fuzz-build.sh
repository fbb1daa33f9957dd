#!/usr/bin/env bash
# Configures and builds the libFuzzer targets (fuzz/, cmake/fuzz.cmake) in
# build-fuzz/ with clang: ATTN_FUZZ=ON, static libattn, no tests, no command.
# Used by scripts/fuzz-smoke.sh and scripts/fuzz-long.sh; incremental after
# the first build (ccache is used when installed).
set -euo pipefail
cd "$(dirname "$0")/.."
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
if [ ! -f build-fuzz/build.ninja ]; then
  cmake -S . -B build-fuzz -G Ninja -DATTN_FUZZ=ON -DATTN_BUILD_TESTS=OFF -DBUILD_SHARED_LIBS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -DNDEBUG" \
    -DCMAKE_CXX_COMPILER=clang++ "${launcher[@]}" >/dev/null
fi
nice -n 5 ninja -C build-fuzz -j"${FUZZ_BUILD_JOBS:-2}" fuzz_all >/dev/null
