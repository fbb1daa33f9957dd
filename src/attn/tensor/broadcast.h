// Index arithmetic shared by the broadcasting kernels (internal header).
#pragma once
#include <array>

#include "attn/tensor/shape.h"

namespace attn::kernels::detail {

// Element strides of `in` when read as `out` under numpy broadcasting
// (0 along axes that broadcast), right-aligned to out's rank.
inline std::array<int64_t, kMaxRank> broadcast_strides(const Shape& in, const Shape& out) {
  std::array<int64_t, kMaxRank> st{};
  int64_t s = 1;
  for (int i = out.rank() - 1, j = in.rank() - 1; i >= 0; --i, --j) {
    int64_t d = j >= 0 ? in[j] : 1;
    st[i] = d == 1 ? 0 : s;
    s *= d;
  }
  return st;
}

// Offset of element `row` * out.back() (the start of a last-axis row of out)
// in an operand with strides `st`.
inline int64_t row_offset(int64_t row, const Shape& out, const std::array<int64_t, kMaxRank>& st) {
  int64_t off = 0;
  for (int i = out.rank() - 2; i >= 0; --i) {
    int64_t idx = row % out[i];
    row /= out[i];
    off += idx * st[i];
  }
  return off;
}

}  // namespace attn::kernels::detail
