#!/usr/bin/env bash
# Installs attn from BUILD_DIR into a temporary prefix, MOVES the prefix (an
# installed attn must not depend on where it was installed) and checks the
# moved package the way a user elsewhere would meet it:
#   1. no installed .cmake file names a path outside the prefix: /usr/, the
#      build or source tree, or the prefix before the move;
#   2. no installed header includes a private dependency's header, and no
#      internal header (kernels, detail, simd/, config/, cli/, bench/) is installed;
#   3. find_package(attn) from tests/install_consumer with the private
#      dependencies made unfindable (a shared attn must not ask for them; a
#      static one must), every installed header compiled alone, the consumer
#      built and run;
#   4. the moved bin/attn runs (RPATH $ORIGIN/../lib).
# Usage: run.sh BUILD_DIR SOURCE_DIR shared|static
set -euo pipefail
build_dir=$1 source_dir=$2 kind=$3
consumer_dir=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "install test: $*" >&2
  exit 1
}

cmake --install "$build_dir" --prefix "$tmp/installed" >/dev/null
mv "$tmp/installed" "$tmp/moved"
prefix=$tmp/moved

# 1. Relocatable package files
for path in /usr/ "$build_dir" "$source_dir" "$tmp/installed"; do
  if grep -rn --include='*.cmake' -F "$path" "$prefix"; then fail "an installed .cmake file names $path (above)"; fi
done

# 2. Public headers only
if grep -rnE '#include *[<"](omp\.h|cblas\.h|nlohmann/|yaml-cpp/|zlib\.h|sentencepiece)' "$prefix/include"; then
  fail "an installed header includes a private dependency's header (above)"
fi
internal=$(cd "$prefix/include" && find . -name '*kernels.h' -o -name '*detail*' -o -path '*/simd/*' -o -path '*/cli/*' \
  -o -path '*/bench/*' -o -path '*/config/*')
[ -z "$internal" ] || fail "internal headers installed: $internal"

# 3. The consumer, and every installed header on its own
disable=()
if [ "$kind" = shared ]; then
  for dep in OpenMP nlohmann_json ZLIB yaml-cpp PkgConfig; do disable+=("-DCMAKE_DISABLE_FIND_PACKAGE_$dep=TRUE"); done
fi
cmake -S "$consumer_dir" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release "${disable[@]}" \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; fail "configuring the consumer failed (above)"; }
grep -qxF "attn_DIR:PATH=$prefix/lib/cmake/attn" "$tmp/build/CMakeCache.txt" ||
  grep -qxF "attn_DIR:PATH=$prefix/lib64/cmake/attn" "$tmp/build/CMakeCache.txt" ||
  fail "the consumer found another attn: $(grep '^attn_DIR' "$tmp/build/CMakeCache.txt")"
cmake --build "$tmp/build" -j 2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "building the consumer failed (above)"; }
"$tmp/build/consumer"

# 4. The installed command
attn=$prefix/bin/attn
if [ "$kind" = shared ]; then
  ldd "$attn" | grep -F libattn | grep -qF "$prefix/" || fail "bin/attn loads libattn from elsewhere: $(ldd "$attn")"
fi
"$attn" --help >/dev/null || fail "bin/attn --help failed"
echo "install test: $kind attn installed, moved to $prefix and used from there"
