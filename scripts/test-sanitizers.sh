#!/usr/bin/env bash
# The sanitizer stages of CI (scripts/test.sh calls them): builds attn twice
# more and runs the suite under the sanitizers; fails on any report.
#   build-asan/  clang, ASan + UBSan (+ LeakSanitizer): the suite (ctest) but
#                the packaging, browser and parity tests (see run_asan); also
#                the fuzz targets (ATTN_FUZZ), which scripts/fuzz-smoke.sh runs.
#   build-tsan/  clang, TSan, with libomp and its TSan tool Archer: the tests
#                of the code that runs on more than one thread (TSAN_TESTS).
# Both with clang: it compiles this code base at -O1 in under half GCC's time
# (a cold ASan build: 926 s with GCC 12), which is what lets both stages fit
# CI's budget.
# Usage: scripts/test-sanitizers.sh [asan|tsan]...   (default: both)
# ASAN_ISA=avx2 (or scalar, ...) runs the ASan suite with the kernels capped at
# that instruction set (ATTN_ISA, cpu/isa.h); scripts/test.sh uses it so that
# this run is also the suite's run under the avx2 cap.
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
# so OpenMP code is checked soundly.
#
# BLAS: both builds open the pthread build of OpenBLAS (ATTN_BLAS, package
# libopenblas0-pthread), not the OpenMP one the release build opens. The OpenMP
# build needs libgomp; loaded beside libomp, or with libgomp.so.1 pointed at
# libomp (which exports the GOMP_* entry points), its threaded sgemm hung
# forever: libomp ran its parallel region on one thread while OpenBLAS's
# level-3 driver waited for the second (seen in Pool.* and RnnSearchSearchStep.*).
# The pthread build keeps its own threads out of OpenMP's way.
#
# Reports go to files (log_path), not only to the test's stderr: a test that
# runs the `attn` command and expects it to fail would otherwise pass when the
# command fails on a sanitizer report. Any report file fails this script.
# Checked for ASan, UBSan, LeakSanitizer and TSan reports.
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
#    (Serve, ServeBatching, ServeProcess runs `attn serve` itself);
#  - the Transformer's search step on two threads, its rows kept per thread and
#    its products split by column units (Transformer.CachedStep...OnEveryThread).
TSAN_TESTS='^(IsaDispatch|Rnn[A-Za-z]*|(All/)?LuongLoop|(All/)?LuongSearchStep|RowsGemm|Gemm|VocabTopK|FusedAttention|SdpaPacked|FusedVsMaterialized|MultiHeadPacked|Pool|Trainer|Resume|CheckpointSlot|Serve|ServeBatching|ServeProcess)[./]|^Transformer\.CachedStepEqualsRecomputedPrefixOnEveryThread$'
# ... and the files that hold them: the TSan build compiles only these tests.
TSAN_TEST_FILES='isa_dispatch;models;luong_decoder;luong_search;rnn;rnn_kernels;search_step;gemm;attention_fused;sdpa_packed;pool;trainer;resume;checkpoint_slot;serve;serve_batching;serve_process;transformer'

llvm_lib=$(dirname "$(readlink -f "$(command -v clang++)")")/../lib

# configure <dir> [cmake args...]: a clang RelWithDebInfo build at -O1 (line
# tables only: file:line in the reports, little to compile). Without MPI
# (ATTN_MPI=OFF): Open MPI is not built with the sanitizers, LeakSanitizer
# reports its runtime's allocations by the hundred, and its progress threads
# are invisible to TSan; the MPI jobs (MpiTrain.*) run in the release suite,
# here they skip, and the trainer's data-parallel parts run under the
# sanitizers through DataParallel.* (an in-process stand-in for the ranks).
configure() {
  local dir=$1
  shift
  CC=clang CXX=clang++ cmake -S . -B "$dir" -G Ninja -DATTN_NATIVE=OFF -DATTN_MPI=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only -DNDEBUG" "$@" >/dev/null
}

# build <dir> <targets...>: builds and says how long it took
build() {
  local dir=$1 t0=$SECONDS
  shift
  ninja -C "$dir" -j "$(nproc)" "$@"
  echo "== $dir built in $((SECONDS - t0)) s"
}

# The pthread build of OpenBLAS (see the top of this file)
export ATTN_BLAS=/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblas.so.0

# LLVM's OpenMP runtime registers each process in /dev/shm/__KMP_REGISTERED_LIB_<pid>_<uid>
# (shm_open, then ftruncate to 1 KiB). A process that died between the two (killed, or
# under a file-size limit) leaves an empty file; a later process given the same pid
# maps it and dies of SIGBUS reading it (seen in a clean-clone CI run: a file left by an
# earlier session killed Trainer/EveryKind.ResumeEqualsUninterrupted). An empty file
# is never a live registration: remove them before each sanitizer run.
forget_empty_openmp_registrations() {
  find /dev/shm -maxdepth 1 -name '__KMP_REGISTERED_LIB_*' -user "$(id -u)" -size 0 -delete 2>/dev/null || true
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
  local b=$src/build-asan status=0 t0
  echo "== ASan + UBSan build (clang): the whole suite${ASAN_ISA:+, ATTN_ISA=$ASAN_ISA}"
  # ATTN_FUZZ: the fuzz targets share this build (cmake/fuzz.cmake), and
  # scripts/fuzz-smoke.sh runs them from here (FUZZ_BUILD_DIR=build-asan)
  configure "$b" -DATTN_SANITIZE=address,undefined -DATTN_FUZZ=ON
  build "$b"
  rm -rf "$b/sanitizer-reports" && mkdir -p "$b/sanitizer-reports"
  forget_empty_openmp_registrations
  t0=$SECONDS
  # halt_on_error: the first report ends the process (and fails the test).
  # detect_leaks: LeakSanitizer at exit; leaks of the Debian libraries are
  # suppressed one by one in lsan.supp (each with the reason).
  # Not install.find_package: it tests the package's layout (the release suite
  # runs it); here it would compile every installed header under ASan (150 s)
  # to check nothing about memory. Not the browser tests: the page runs in
  # chromium, which is not sanitized, and the server routes it calls run under
  # ASan in the Serve* tests (browser.page alone added 90 s). Not the PyTorch /
  # NumPy parity tests: their C++ side runs the ops the gradient checks and the
  # other C++ tests run here, and most of their time is python's; the release
  # suite runs them.
  # (No comment lines inside the command below: one between its continued
  # lines ends it there, and the options would not reach ctest.)
  ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:check_initialization_order=1:strict_init_order=1:log_path=$b/sanitizer-reports/asan" \
  LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$b/sanitizer-reports/ubsan" \
  OMP_WAIT_POLICY=passive env ${ASAN_ISA:+ATTN_ISA=$ASAN_ISA} \
    ctest --test-dir "$b" --output-on-failure -j 2 --timeout 900 -E '^(install\.find_package|browser\..*)$|Torch|Parity|Oracle|Numpy' || status=$?
  echo "== ASan + UBSan suite ran in $((SECONDS - t0)) s"
  check_reports "$b" || status=1
  return "$status"
}

run_tsan() {
  local b=$src/build-tsan status=0 t0
  echo "== TSan build (clang, libomp + Archer): the threaded tests"
  configure "$b" -DATTN_SANITIZE=thread "-DATTN_TEST_FILES=$TSAN_TEST_FILES"
  build "$b" attn_tests  # also builds the `attn` command (ServeProcess runs it)
  rm -rf "$b/sanitizer-reports" && mkdir -p "$b/sanitizer-reports"
  forget_empty_openmp_registrations
  t0=$SECONDS
  # ignore_noninstrumented_modules: accesses inside libomp, OpenBLAS and the
  # other uninstrumented libraries are not checked (Archer's requirement);
  # their synchronisation still is.
  # OMP_NUM_THREADS=2: teams of two whatever the machine (the tests set 2
  # where they need it; more threads only cost time under TSan).
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1:log_path=$b/sanitizer-reports/tsan" \
  OMP_TOOL_LIBRARIES="$llvm_lib/libarcher.so" \
  OMP_NUM_THREADS=2 OMP_WAIT_POLICY=passive \
    ctest --test-dir "$b" --output-on-failure -j 2 --timeout 900 -R "$TSAN_TESTS" || status=$?
  echo "== TSan tests ran in $((SECONDS - t0)) s"
  check_reports "$b" || status=1
  return "$status"
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
