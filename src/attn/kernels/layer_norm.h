// Layer norm over the last axis, row by row: the loop of autograd's layer_norm
// (autograd/ops_nn.cpp) and of the Transformer's search step
// (models/transformer/transformer_search.cpp), compiled per instruction set (an
// ISA source, kernels/dispatch.h), so both compute the same numbers.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::kernels::norm {

ATTN_ISA_DECLARE(void layer_norm_rows(const float* x, int64_t rows, int64_t n, const float* w, const float* b,
                                      float eps, float* out, float* xhat, float* rstd);)

// x [rows, n] -> out [rows, n] = xhat * w + b, xhat = (x - mean) * rstd and
// rstd = 1 / sqrt(var + eps) per row (the mean and the variance summed in
// double: the variance of a row with a large mean cancels). w, b [n]; xhat
// [rows, n] and rstd [rows] are written when not null (a backward pass needs
// them). out may be x. No threading: callers split the rows.
inline void layer_norm_rows(const float* x, int64_t rows, int64_t n, const float* w, const float* b, float eps,
                            float* out, float* xhat, float* rstd) {
  ATTN_ISA_CALL(layer_norm_rows, x, rows, n, w, b, eps, out, xhat, rstd);
}

}  // namespace attn::kernels::norm
