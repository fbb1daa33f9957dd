// The BLAS attn runs its large matrix products on, loaded at run time.
//
// attn does not link a BLAS: it opens one with dlopen the first time it is
// needed, so that it can choose OpenBLAS's kernels BEFORE OpenBLAS initialises.
// Debian 12's OpenBLAS 0.3.21 does not recognise recent AMD CPUs with AVX-512
// (Zen 4 / Zen 5 EPYC: it reports "Core: Haswell") and then runs its AVX2
// kernels at half the machine's speed; its only switch, OPENBLAS_CORETYPE, is
// read by OpenBLAS's constructor, which for a linked library runs before main.
// So attn sets OPENBLAS_CORETYPE (in its own environment, which child processes
// such as the benchmark peers inherit) before it opens the library: to
// $ATTN_BLAS_CORETYPE when the user set that, else to the core of the
// instruction set attn's own kernels run at (cpu::isa(), which ATTN_ISA caps:
// SKYLAKEX for avx512, HASWELL for avx2, PRESCOTT for scalar). An
// OPENBLAS_CORETYPE inherited from the environment is replaced, and said so in
// `attn --version`: the images of this project's machines set it to Haswell on
// AVX-512 CPUs (left unset, OpenBLAS 0.3.21 itself picks Cooperlake there).
//
// Libraries tried, first match wins: $ATTN_BLAS (a path, or a soname; an error
// if it cannot be opened), Debian's OpenMP build of OpenBLAS (so that BLAS and
// attn's kernels share one libgomp thread pool), Fedora's (libopenblaso), then
// whatever libopenblas.so.0 the loader finds. Any CBLAS with cblas_sgemm and
// cblas_sgemv works; the OpenBLAS extras (thread count, core name) are used
// when present.
#pragma once
#include <cstdint>
#include <string>

#include "attn/cpu/isa.h"

namespace attn::cpu {

// OpenBLAS's core for an instruction set: SKYLAKEX, HASWELL or PRESCOTT
const char* blas_core_for(Isa isa);

struct BlasInfo {
  std::string path;       // what dlopen was given ("ATTN_BLAS" value or a candidate)
  std::string config;     // openblas_get_config(), e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ...", or "CBLAS"
  std::string core;       // openblas_get_corename(), e.g. "SkylakeX"; "" when the BLAS has none
  std::string threading;  // "openmp", "pthreads", "sequential" or "" (unknown)
  std::string coretype_source;    // "attn" (from cpu::isa()) or "ATTN_BLAS_CORETYPE"
  std::string coretype_replaced;  // the OPENBLAS_CORETYPE attn replaced, "" if none
};

// loads the BLAS on first use (thread-safe); throws std::runtime_error listing
// every library tried when none opens
const BlasInfo& blas_info();

// C[M, N] = alpha op(A) op(B) + beta C, row-major, op = transpose when trans_*;
// lda / ldb / ldc are the row strides of A, B, C as stored
void blas_sgemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// y[rows or cols] = alpha op(A) x + beta y, row-major A [rows, cols] with row stride lda
void blas_sgemv(bool trans, int64_t rows, int64_t cols, float alpha, const float* A, int64_t lda, const float* x,
                int64_t incx, float beta, float* y, int64_t incy);
// the BLAS's own thread count, when it has one (OpenBLAS)
void blas_set_num_threads(int n);

}  // namespace attn::cpu
