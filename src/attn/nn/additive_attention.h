// Bahdanau (additive) attention as a module for RNN decoders, on the fused
// decoder step of attn/attention/additive_step.h.
//
// Legend: B batch, Lk source length, Qd decoder state size, Kd annotation
// (key) size, A attention size, Dv value size (usually Dv = Kd: the annotations
// are both keys and values).
//
//   e_j = v^T tanh(W1 s + W2 h_j + b),  a = softmax(e),  c = sum_j a_j h_j
//
// Usage: once per source batch `keys_proj = att.project_keys(annotations)`, then
// per decoder step `att.step(state, keys_proj, annotations, lengths)`.
#pragma once
#include "attn/attention/additive_step.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::nn {

class AdditiveAttention : public Module {
public:
  // Parameters: query_proj.weight [A, Qd] (W1), key_proj.weight [A, Kd] (W2),
  // key_proj.bias [A] (b), v [A]. Init: U(+-1/sqrt(fan_in)) as PyTorch's Linear.
  AdditiveAttention(int64_t query_dim, int64_t key_dim, int64_t attn_dim, Rng& rng);

  // keys [B, Lk, Kd] -> keys_proj [B, Lk, A] = W2 h + b (once per source batch)
  Tensor project_keys(const Tensor& keys) const { return attention::project_keys(keys, key_proj_weight, key_proj_bias); }
  // query [B, Qd], keys_proj [B, Lk, A], values [B, Lk, Dv], key_lengths [B] or
  // undefined -> context [B, Dv], weights [B, Lk] (+ scores [B, Lk] when need_scores)
  attention::AdditiveStepOutput step(const Tensor& query, const Tensor& keys_proj, const Tensor& values,
                                     const Tensor& key_lengths = Tensor(), bool need_scores = false) const {
    return attention::additive_step(query, keys_proj, values, query_proj_weight, v, key_lengths, need_scores);
  }

  Tensor query_proj_weight, key_proj_weight, key_proj_bias, v;
};

}  // namespace attn::nn
