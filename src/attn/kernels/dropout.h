// Counter-based element dropout (autograd/ops_dropout.h's dropout_hashed),
// compiled per instruction set (an ISA source, kernels/dispatch.h).
//
// Element (r, j) of a [rows, n] array is kept when the hash of (seed, r, j) of
// kernels/dropout_hash.h (the attention dropout's) is at or above p's
// threshold: rows are independent, so the loop runs in parallel, and the
// backward regenerates the mask from the seed instead of storing it.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::kernels::dropout {

ATTN_ISA_DECLARE(void apply(const float* x, float* out, int64_t rows, int64_t n, float p, uint64_t seed);)

// out[r, j] = keep(seed, r, j) ? x[r, j] / (1 - p) : 0 for a [rows, n] array (out may be x)
inline void apply(const float* x, float* out, int64_t rows, int64_t n, float p, uint64_t seed) {
  ATTN_ISA_CALL(apply, x, out, rows, n, p, seed);
}

}  // namespace attn::kernels::dropout
