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
#   4. the moved bin/attn runs (RPATH $ORIGIN/../lib), runs a benchmark, takes
#      its peer scripts from the moved share/attn/peers and names a missing
#      --peer-dir; the build tree's attn takes them from the source tree.
# Usage: run.sh BUILD_DIR SOURCE_DIR shared|static DATADIR
set -euo pipefail
build_dir=$1 source_dir=$2 kind=$3 datadir=$4
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
if grep -rnE '#include *[<"](omp\.h|cblas\.h|nlohmann/|yaml-cpp/|zlib\.h|sentencepiece|png\.h|jpeglib\.h)' "$prefix/include"; then
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
"$attn" bench gemm --no-peers --repeats 1 >"$tmp/bench.jsonl" || fail "bin/attn bench gemm failed"
[ "$(grep -c '"bench":"sgemm"' "$tmp/bench.jsonl")" = 2 ] || fail "bin/attn bench gemm printed: $(cat "$tmp/bench.jsonl")"
peers=$("$attn" bench --print-peer-dir)
[ "$(realpath "$peers")" = "$(realpath "$prefix/$datadir/attn/peers")" ] ||
  fail "bin/attn would run the peer scripts in $peers, not in $prefix/$datadir/attn/peers"
for script in "$source_dir"/bench/peers/*.py; do
  [ -f "$peers/$(basename "$script")" ] || fail "$(basename "$script") is not installed in $peers"
done
if out=$("$attn" bench --print-peer-dir --peer-dir "$tmp/no-peers" 2>&1); then fail "a missing --peer-dir was accepted"; fi
grep -qF "$tmp/no-peers" <<<"$out" || fail "a missing --peer-dir is not named in the error: $out"
[ "$("$build_dir/attn" bench --print-peer-dir)" = "$source_dir/bench/peers" ] ||
  fail "the build tree's attn does not take the source tree's peer scripts"
echo "install test: $kind attn installed, moved to $prefix and used from there"
