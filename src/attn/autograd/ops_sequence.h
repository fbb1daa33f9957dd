// Differentiable ops over sequences: step-by-step recurrences over a
// time-major tensor, and the real positions of a padded batch as rows.
//
// A decoder that runs one step at a time needs row t of a precomputed
// [T, ...] tensor at step t. `slice` would do, but its backward writes a full
// [T, ...] zero tensor per step (quadratic in T); unbind0 hands out all T rows
// as views in one op whose backward assembles one [T, ...] gradient.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/autograd/ops.h"

namespace attn {

// x [T, rest...] -> T tensors [rest...], tensor t sharing row t of x's storage.
// Differentiable op "unbind": dx[t] = d(out_t) (zeros for outputs without a gradient).
std::vector<Tensor> unbind0(const Tensor& x);

// Which positions of a padded batch [B, L, ...] are real: sentence b's first
// lengths[b] positions. Position-wise layers (linear maps, layer norm,
// dropout, the feed-forward) run on the real positions alone as rows [N, ...],
// N = count(), sentence by sentence: with sentences of 8..20 pieces padded to
// 20 a padded batch is about 1.4x the products of its rows.
struct PaddedRows {
  std::vector<int64_t> lengths;  // [B], each in [0, L]
  int64_t L = 0;                 // the padded length
  Tensor lengths_tensor;         // [B] float-encoded lengths (the attention kernels' key lengths)
  std::vector<int64_t> starts;   // [B + 1]: sentence b's rows are [starts[b], starts[b + 1])
  int64_t count() const { return starts.back(); }
  int64_t batch() const { return int64_t(lengths.size()); }
};
// Throws std::invalid_argument naming a length outside [0, L].
PaddedRows padded_rows(const std::vector<int64_t>& lengths, int64_t L);

// x [B, L, rest...] -> [N, rest...]: the real positions as rows.
// Differentiable op "pack_padded": dx = unpack_padded(dout) (zeros at padding).
Tensor pack_padded(const Tensor& x, const PaddedRows& r);
// x [N, rest...] -> [B, L, rest...], zeros past each length (pack_padded's inverse).
// Differentiable op "unpack_padded": dx = pack_padded(dout).
Tensor unpack_padded(const Tensor& x, const PaddedRows& r);

}  // namespace attn
