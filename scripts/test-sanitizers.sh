#!/usr/bin/env bash
# The sanitizer stage meant for CI (not yet called by scripts/test.sh: its time
# is not yet measured): builds attn twice more and runs the suite under the
# sanitizers; fails on any report.
#   build-asan/  GCC, ASan + UBSan (+ LeakSanitizer): the whole suite (ctest).
#   build-tsan/  clang, TSan, with libomp and its TSan tool Archer: the tests
#                of the code that runs on more than one thread (TSAN_TESTS).
# Usage: scripts/test-sanitizers.sh [asan|tsan]...   (default: both)
# Both builds are RelWithDebInfo at -O1 (the dispatched kernels keep their -O3,
# CMakeLists.txt): line numbers in the reports, a fast enough suite.
#
# Why TSan is built with clang, not GCC: GCC's OpenMP runtime (libgomp) is not
# instrumented and its barriers are futexes that TSan cannot see, so every value
# handed from one parallel region to the next would look like a race; the only
# GCC-side remedies are suppressing libgomp (which hides the worker threads'
# frames, i.e. attn's own races in OpenMP loops) or running one thread (which
# tests nothing). LLVM's libomp announces its barriers, tasks and locks to TSan
# through Archer (an OMPT tool, libarcher.so, shipped with Debian's libomp-dev),
# so OpenMP code is checked soundly. OpenBLAS (the openmp build, opened at run
# time by cpu/blas.cpp) needs libgomp.so.1: the TSan runs point that name at
# libomp, which exports the GOMP_* entry points, so one OpenMP runtime serves
# attn's loops and OpenBLAS, as libgomp does in the other builds.
#
# Reports go to files (log_path), not only to the test's stderr: a test that
# runs the `attn` command and expects it to fail would otherwise pass when the
# command fails on a sanitizer report. Any report file fails this script.
# Checked for ASan, LeakSanitizer and TSan reports; GCC 12's combined ASan+UBSan
# runtime writes UBSan's reports to stderr whatever log_path says (tried with
# UBSAN_OPTIONS and ASAN_OPTIONS), so a UBSan report fails the test it happens
# in (no recovery), but one inside a child command only if the test checks it.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
supp=$src/tests/sanitizers

# The threaded code and its tests (TSan):
#  - OpenMP kernels dispatched per instruction set: IsaDispatch (every kernel
#    under every ISA), RnnKernels/RnnGemm/RowsGemm/Gemm, the flash attention
#    forward/backward split over keys (FusedAttention, SdpaPacked, FusedVsMaterialized),
#    the fused search step (RnnSearchSearchStep, RnnSearchDecoder), VocabTopK;
#  - the tensor pool shared by OpenMP workers (Pool);
#  - training with 2 threads end to end: the optimisers and gradient clipping
#    (parallel loops), checkpoints and resume (Trainer, Resume, CheckpointSlot);
#  - the server: std::thread workers, the batcher, httplib's connection threads
#    (Serve, ServeBatching, ServeProcess runs `attn serve` itself).
TSAN_TESTS='^(IsaDispatch|Rnn[A-Za-z]*|RowsGemm|Gemm|VocabTopK|FusedAttention|SdpaPacked|FusedVsMaterialized|MultiHeadPacked|Pool|Trainer|Resume|CheckpointSlot|Serve|ServeBatching|ServeProcess)[./]'

configure() {  # configure <dir> [cmake args...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DATTN_NATIVE=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "$@" >/dev/null
}

# Fails (and prints them) if any sanitizer wrote a report under <dir>/sanitizer-reports
check_reports() {
  local dir=$1/sanitizer-reports
  if compgen -G "$dir/*" >/dev/null; then
    echo "== sanitizer reports in $dir:"
    for f in "$dir"/*; do echo "-- $f"; head -n 60 "$f"; done
    return 1
  fi
  echo "== no sanitizer reports"
}

run_asan() {
  local b=$src/build-asan status=0
  echo "== ASan + UBSan build (GCC): the whole suite"
  configure "$b" -DATTN_SANITIZE=address,undefined
  local t0=$SECONDS
  ninja -C "$b" -j "$(nproc)"
  echo "== build-asan built in $((SECONDS - t0)) s"
  rm -rf "$b/sanitizer-reports" && mkdir -p "$b/sanitizer-reports"
  t0=$SECONDS
  # halt_on_error: the first report ends the process (and fails the test).
  # detect_leaks: LeakSanitizer at exit; leaks of the Debian libraries are
  # suppressed one by one in lsan.supp (each with the reason).
  ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$b/sanitizer-reports/asan" \
  LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$b/sanitizer-reports/ubsan" \
  OMP_WAIT_POLICY=passive \
    ctest --test-dir "$b" --output-on-failure -j 2 --timeout 900 || status=$?
  echo "== ASan + UBSan suite ran in $((SECONDS - t0)) s"
  check_reports "$b" || status=1
  return "${status:-0}"
}

run_tsan() {
  local b=$src/build-tsan status=0
  local llvm
  llvm=$(dirname "$(readlink -f "$(command -v clang++)")")/../lib
  echo "== TSan build (clang, libomp + Archer): the threaded tests"
  CC=clang CXX=clang++ configure "$b" -DATTN_SANITIZE=thread
  local t0=$SECONDS
  # attn_tests also builds the `attn` command (ServeProcess runs it)
  ninja -C "$b" -j "$(nproc)" attn_tests
  echo "== build-tsan built in $((SECONDS - t0)) s"
  # OpenBLAS's libgomp.so.1 -> libomp (see the top of this file)
  mkdir -p "$b/omp-as-gomp"
  ln -sf "$llvm/libomp.so.5" "$b/omp-as-gomp/libgomp.so.1"
  rm -rf "$b/sanitizer-reports" && mkdir -p "$b/sanitizer-reports"
  t0=$SECONDS
  # ignore_noninstrumented_modules: accesses inside libomp, OpenBLAS and the
  # other uninstrumented libraries are not checked (Archer's requirement);
  # their synchronisation still is.
  # OMP_NUM_THREADS=2: teams of two whatever the machine (the tests set 2
  # where they need it; more threads only cost time under TSan).
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:log_path=$b/sanitizer-reports/tsan" \
  OMP_TOOL_LIBRARIES="$llvm/libarcher.so" \
  LD_LIBRARY_PATH="$b/omp-as-gomp${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive \
    ctest --test-dir "$b" --output-on-failure -j 2 --timeout 900 -R "$TSAN_TESTS" || status=$?
  echo "== TSan tests ran in $((SECONDS - t0)) s"
  check_reports "$b" || status=1
  return "${status:-0}"
}

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(asan tsan)
for s in "${stages[@]}"; do
  case $s in
    asan) run_asan ;;
    tsan) run_tsan ;;
    *) echo "test-sanitizers.sh: unknown stage '$s' (asan, tsan)" >&2; exit 2 ;;
  esac
done
