// One decoder step of additive (Bahdanau) attention as a single fused op.
//
// Legend: B batch, Lk source length, Qd decoder state size, A attention size,
// Dv annotation (value) size.
//
// Bahdanau, Cho & Bengio 2015, eq. (5)-(6) and appendix A.1.2:
//   e_j = v^T tanh(W1 s + U h_j)      s: decoder state, h_j: annotations
//   a   = softmax(e) over j < length  c = sum_j a_j h_j
// U h_j does not depend on the decoder step, so it is computed once per source
// sentence (project_keys) and passed in as keys_proj; the step then costs one
// [B, Qd] x [Qd, A] product plus B Lk A tanh. Forward saves W1 s [B, A] and the
// weights; the backward recomputes the tanh (nothing of size B Lk A is kept).
#pragma once
#include "attn/autograd/ops.h"

namespace attn::attention {

// keys [B, Lk, Dk], W2 [A, Dk], bias [A] or undefined -> keys_proj [B, Lk, A] = U h + b.
// Differentiable (a plain linear); call once per source batch.
Tensor project_keys(const Tensor& keys, const Tensor& W2, const Tensor& bias);

struct AdditiveStepOutput {
  Tensor context;  // [B, Dv]
  Tensor weights;  // [B, Lk], zero past each length; differentiable (e.g. for a guided-alignment loss)
  Tensor scores;   // [B, Lk] e_j before the softmax, -inf past each length, when need_scores (else
                   // undefined); not differentiable (inspection: attn explain)
};

// query [B, Qd], keys_proj [B, Lk, A], values [B, Lk, Dv], W1 [A, Qd], v [A],
// key_lengths [B] (float-encoded, in [0, Lk]) or undefined (all Lk)
// -> context [B, Dv], weights [B, Lk] (+ scores [B, Lk] when need_scores). A row
// with length 0 gives zeros. Differentiable op "additive_step" (gradients for
// query, keys_proj, values, W1, v).
AdditiveStepOutput additive_step(const Tensor& query, const Tensor& keys_proj, const Tensor& values, const Tensor& W1,
                                 const Tensor& v, const Tensor& key_lengths = Tensor(), bool need_scores = false);

}  // namespace attn::attention
