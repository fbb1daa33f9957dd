// Plain double-precision loops that the attention kernels are checked
// against. They call nothing in src/attn/attention (no score kernel, mask,
// dropout hash or softmax of the library): a bug in a kernel that the fused
// and the materialised paths share shows up against these.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::testing {

std::vector<double> to_double(const Tensor& t);
Tensor to_tensor(const std::vector<double>& x, const Shape& shape);  // rounded to float

// One query of additive attention over the first L of S keys, in double:
//   e_j = v^T tanh(qp + kp_j), w = softmax_j(e) over j < L (zeros past L, all 0
//   when L == 0), c = sum_j w_j h_j
// qp [A], kp [S, A], h [S, Dv] -> w [S], c [Dv].
void additive_attend_row(const double* qp, const double* kp, const double* v, int64_t A, const double* h, int64_t Dv,
                         int64_t L, int64_t S, double* w, double* c);

// The additive decoder step with its key projection, forward and backward:
//   qp = W1 query, kp_j = W2 key_j + bias, then additive_attend_row per row.
// query [B, Qd], keys [B, Lk, Dk], values [B, Lk, Dv], W1 [A, Qd], W2 [A, Dk],
// bias [A] or undefined, v [A], lengths [B]; dcontext [B, Dv] and dweights
// [B, Lk] the gradients arriving at the context and the weights.
struct AdditiveReference {
  Tensor context, weights;                                     // [B, Dv], [B, Lk]
  Tensor dquery, dkeys, dvalues, dW1, dW2, dbias, dv;          // shaped as the inputs
};
AdditiveReference additive_reference(const Tensor& query, const Tensor& keys, const Tensor& values, const Tensor& W1,
                                     const Tensor& W2, const Tensor& bias, const Tensor& v,
                                     const std::vector<int64_t>& lengths, const Tensor& dcontext,
                                     const Tensor& dweights);

// Scaled dot-product attention with every mask and dropout, written from their
// definitions (attention.h, dropout_hash.h's documentation):
//   visible(b, h, i, j) = j < key_lengths[b] && (!causal || j <= i) && keep[b, h, i, j] != 0
//     (keep broadcast right-aligned to [B, H, Lq, Lk])
//   P = softmax over the visible keys of scale q_i . k_j (a row with none: 0)
//   out_i = sum_j P_ij M_ij v_j,  M_ij = 1 / (1 - p) when the weight is kept, else 0
// q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv], dout [B, H, Lq, Dv].
struct SdpaMask {
  std::vector<int64_t> key_lengths;  // [B] or empty (all Lk)
  bool causal = false;
  Tensor keep;                       // broadcastable to [B, H, Lq, Lk] or undefined
};
struct SdpaReference {
  Tensor out, dq, dk, dv;
};
SdpaReference sdpa_reference(const Tensor& q, const Tensor& k, const Tensor& v, double scale, const SdpaMask& mask,
                             float dropout, uint64_t seed, const Tensor& dout);

// Whether weight (b, h, i, j) survives dropout p with `seed`: the counter-based
// hash of dropout_hash.h (MurmurHash3's finaliser over (seed, row, j), row =
// (b H + h) Lq + i), spelled out here from its definition.
bool reference_dropout_keeps(uint64_t seed, float p, int64_t row, int64_t j);

}  // namespace attn::testing
