// C = A W^T for a few rows of A, reading the weight W in its own row-major
// layout: the decoder step of a search at batch 1 (greedy: 1 row, beam K: K
// rows), where every product is a sweep over a whole weight matrix for a
// handful of activations.
//
// Why not BLAS: sgemm packs W on every call (OpenBLAS 0.3.21 does so even for
// one row), which costs more than the product; sgemv covers one row only, so
// a beam of K rows would stream the weight K times. Here each block of up to
// kMaxRows rows streams W once and keeps those rows' partial sums in vector
// registers (one dot product per output, reduced once at the end). When the
// same weight multiplies many rows, rnn_gemm's packed micro-kernel is the
// faster choice (no horizontal reductions, reuse of each W element 12 rows
// deep); its packing pays off only over many rows.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::rows_gemm {

constexpr int64_t kMaxRows = 8;  // rows per pass over W (more rows: one pass per block)

// C[i, o] = (C[i, o] if accumulate) + sum_{k < K} A[i, k] W[o, k]
// for rows i < m and outputs o in [o0, o1).
// A [m, K] with row stride lda, W [>= o1, K] with row stride ldw, C [m, >= o1]
// with row stride ldc. Any m >= 0, K >= 0.
// Compiled per instruction set, the build for cpu::isa() is called (kernels/dispatch.h).
ATTN_ISA_DECLARE(void gemm_wt(int64_t m, int64_t K, const float* a, int64_t lda, const float* w, int64_t ldw,
                              int64_t o0, int64_t o1, float* c, int64_t ldc, bool accumulate);)
inline void gemm_wt(int64_t m, int64_t K, const float* a, int64_t lda, const float* w, int64_t ldw, int64_t o0,
                    int64_t o1, float* c, int64_t ldc, bool accumulate) {
  ATTN_ISA_CALL(gemm_wt, m, K, a, lda, w, ldw, o0, o1, c, ldc, accumulate);
}

}  // namespace attn::rows_gemm
