#!/usr/bin/env bash
# The README's second command (and CI's): install, build, run the whole suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage's wall time, for RELIABILITY.md's "CI time"
t_stage=$SECONDS
stage_done() {
  echo "== test.sh: $1 took $((SECONDS - t_stage)) s (total $SECONDS s)"
  t_stage=$SECONDS
}
bash scripts/install-test-deps.sh  # install-deps.sh + the browser test's chromium and npm packages
stage_done "installing"
bash scripts/build.sh
stage_done "the release build"
cd build
# python.pytest (python/tests: the Python module against PyTorch, NumPy and the command) is
# a parity test too: it runs in the suite below, once
PARITY_TESTS='Torch|Parity|Oracle|Numpy|^python\.'
BROWSER_TESTS='^browser\.'  # the page does not depend on the instruction set
# Tests of processes, files and packaging, not of kernels: run once, at the machine's instruction set.
# MpiTrain: `mpirun --oversubscribe -np 2` jobs (tests/test_mpi_train.cpp, ~40 s; as root, CI's
# container, with --allow-run-as-root, which the test adds when it runs as root).
# isa.*: the kernel objects' symbols and the compiler's vectorisation reports, not a run.
PROCESS_TESTS='^(install|isa|KillResume|HostileIo|FullDisk|ServeHostile|ServeProcess|MpiTrain)\.'
./attn --version  # what the figures below ran on
# 2 test processes: the parity tests spend most of their time starting python.
# Passive OpenMP waits: two test processes share 2 cores, and spinning
# workers would steal the core a peer thread needs to reach the barrier.
OMP_WAIT_POLICY=passive ctest --output-on-failure -j 2 --timeout 900
stage_done "the suite"
# Again with the kernels capped at each lower instruction set (cpu/isa.h): every
# build of every dispatched kernel must pass. The PyTorch / NumPy parity tests
# (half the suite's time, mostly python start-up) ran above; the C++ tests here
# hold each kernel to its reference. The browser tests, and the tests of
# processes, files and the package (PROCESS_TESTS), run once, above.
# On an AVX-512 machine the avx2 cap is the ASan stage's below (ASAN_ISA): that
# stage runs the whole suite anyway, and one run fewer keeps CI in its budget.
cpu_isa=$(./attn --version | sed -n 's/^instruction set: \([a-z0-9]*\).*/\1/p')
echo "== the suite without the parity, browser and process tests, ATTN_ISA=scalar"
ATTN_ISA=scalar OMP_WAIT_POLICY=passive ctest --output-on-failure -j 2 --timeout 900 \
  -E "$PARITY_TESTS|$BROWSER_TESTS|$PROCESS_TESTS"
stage_done "the suite at ATTN_ISA=scalar"
cd ..

# The sanitizers (ASan + UBSan over the suite but the packaging, browser and
# parity tests, TSan over the threaded tests) and 20 s of every fuzz target
# (built by the ASan stage): RELIABILITY.md, "Sanitizers" and "Fuzzing".
asan_isa=""
if [[ $cpu_isa == avx512 ]]; then asan_isa=avx2; fi
ASAN_ISA=$asan_isa bash scripts/test-sanitizers.sh asan
stage_done "the ASan + UBSan build and suite"
bash scripts/test-sanitizers.sh tsan
stage_done "the TSan build and tests"
FUZZ_BUILD_DIR=build-asan FUZZ_SECONDS=20 bash scripts/fuzz-smoke.sh  # the targets the ASan build made
stage_done "the fuzz smoke runs"
