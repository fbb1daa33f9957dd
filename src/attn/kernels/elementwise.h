// The array loops of the element-wise tensor kernels (elementwise.cpp),
// compiled per instruction set (kernels/elementwise.cpp is an ISA source,
// kernels/dispatch.h): the inline functions below call the build for cpu::isa().
// The Tensor code (shapes, broadcasting, allocation) stays in elementwise.cpp.
// Every loop goes parallel above kParallelGrain elements (threading.h).
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"
#include "attn/tensor/elementwise_ops.h"

namespace attn::kernels::elementwise {

constexpr int kMaxRank = 6;  // attn::kMaxRank (shape.h; elementwise.cpp checks they agree)

// A row-major output of `rank` axes `dims`, read as rows along its last axis,
// and the element strides of up to two operands read as that output under
// numpy broadcasting (0 along broadcast axes; broadcast.h's broadcast_strides).
// A plain aggregate (a kernel argument).
struct Rows {
  int rank = 0;                       // >= 1
  int64_t dims[kMaxRank] = {};
  int64_t st_a[kMaxRank] = {}, st_b[kMaxRank] = {};
};

ATTN_ISA_DECLARE(void unary(Unary op, const float* x, float* out, int64_t n);
                 void binary(Binary op, const float* a, const float* b, float* out, int64_t n);
                 void binary_rows(Binary op, const float* a, const float* b, float* out, const Rows& rows);
                 void add_scaled(float* dst, const float* src, float alpha, int64_t n);
                 void affine(const float* x, float* out, int64_t n, float alpha, float beta);
                 void sum_rows_to(const float* g, float* out, const Rows& rows);
                 void masked_fill(const float* x, const float* mask, float value, float* out, int64_t n);)

// out[i] = op(x[i]), i < n (tanh and sigmoid: simd/math.h's Cephes forms; NaN passes through)
inline void unary(Unary op, const float* x, float* out, int64_t n) { ATTN_ISA_CALL(unary, op, x, out, n); }
// out[i] = a[i] op b[i], i < n
inline void binary(Binary op, const float* a, const float* b, float* out, int64_t n) {
  ATTN_ISA_CALL(binary, op, a, b, out, n);
}
// out = a op b broadcast: out [dims] contiguous, a and b read with strides st_a, st_b
inline void binary_rows(Binary op, const float* a, const float* b, float* out, const Rows& rows) {
  ATTN_ISA_CALL(binary_rows, op, a, b, out, rows);
}
// dst[i] += alpha * src[i], i < n
inline void add_scaled(float* dst, const float* src, float alpha, int64_t n) {
  ATTN_ISA_CALL(add_scaled, dst, src, alpha, n);
}
// out[i] = alpha * x[i] + beta, i < n
inline void affine(const float* x, float* out, int64_t n, float alpha, float beta) {
  ATTN_ISA_CALL(affine, x, out, n, alpha, beta);
}
// out (zeroed by the caller, strides st_a) += g [dims] summed over the broadcast
// axes; serial (rows of g may add into the same output row)
inline void sum_rows_to(const float* g, float* out, const Rows& rows) { ATTN_ISA_CALL(sum_rows_to, g, out, rows); }
// out[i] = mask[i] != 0 ? x[i] : value, i < n
inline void masked_fill(const float* x, const float* mask, float value, float* out, int64_t n) {
  ATTN_ISA_CALL(masked_fill, x, mask, value, out, n);
}

}  // namespace attn::kernels::elementwise
