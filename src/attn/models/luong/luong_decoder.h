// Luong's teacher-forced decoder loop as one fused op (training path).
//
// Legend: T target steps, B batch, S source length, E embedding, K key size,
// Dv annotation size, Hd decoder size, L decoder layers, A concat / local-p
// size, G = 3 Hd (GRU) or 4 Hd (LSTM).
//
// For t = 0 .. T-1, with h^l_{-1} = h0[l], c^l_{-1} = c0[l], h̃_{-1} = 0 (models/luong.h):
//   h^0_t = cell_0([emb_t; h̃_{t-1}], h^0_{t-1})                  input feeding
//   h^l_t = cell_l(h^{l-1}_t * m^l_t, h^l_{t-1})  for 0 < l < L  (m: dropout masks)
//   h_t = h^{L-1}_t; scores s_j = h_t . k_j (dot, general) or v^T tanh(W_q h_t + k_j) (concat)
//   a_t = softmax over the sentence (global), over [t - D, t + D] (local-m), or over
//         [p_t - D, p_t + D] times exp(-(j - p_t)^2 / (2 (D/2)^2)) with
//         p_t = length sigmoid(v_p^T tanh(W_p h_t)) (local-p)
//   c_t = sum_j a_tj v_j
//   h̃_t = tanh(W_c [c_t; h_t]) * f_t                               (f: dropout mask)
// Output: h̃_0 .. h̃_{T-1} [T, B, Hd] (the output projection follows, models/output_loss.h).
//
// It computes what T calls of Luong::decoder_step compute (tests/test_luong_decoder.cpp
// holds them equal in value and every gradient, with the dropout masks drawn
// in the same order), but:
//  - the embedding half of layer 0's input projection is one GEMM for all steps;
//  - every per-step product reads weights packed once per batch (nn::StepLinear);
//  - forward saves per step only the gates, states, weights and contexts;
//  - backward accumulates d(keys), d(values) in place over the steps and
//    computes every weight gradient as one GEMM over all T * B rows after the loop.
#pragma once
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/models/luong/luong_config.h"
#include "attn/nn/rnn.h"

namespace attn::models {

struct LuongLoopWeights {
  CellType cell = CellType::Lstm;
  std::vector<RnnWeights> layers;  // L layers: w_ih [G, E + Hd] for layer 0 (columns: embedding, then h̃),
                                       // [G, Hd] above; w_hh [G, Hd]; biases [G] (or undefined)
  LuongScore score = LuongScore::General;
  Tensor concat_q, concat_v;           // concat: W_q [A, Hd], v [A]
  LuongWindow window = LuongWindow::Global;
  int64_t half_width = 0;              // D (local windows)
  Tensor local_wp, local_vp;           // local-p: W_p [A, Hd], v_p [A]
  Tensor combine;                      // W_c [Hd, Dv + Hd] (columns: context, then h_t)
};

struct LuongLoopInputs {
  Tensor emb;                  // [T, B, E] the target embeddings (dropout already applied)
  Tensor keys;                 // [B, S, K] dot: the values (K = Dv); general: W_a h̄ (K = Hd); concat: W_k h̄ (K = A)
  Tensor values;               // [B, S, Dv] the annotations h̄
  Tensor lengths;              // [B] float-encoded source lengths in [0, S]
  std::vector<Tensor> h0, c0;  // L x [B, Hd] the initial states (c0: LSTM only)
  Tensor layer_masks;          // [T, L - 1, B, Hd] dropout between layers (0 or 1 / (1 - p)), or undefined
  Tensor feed_masks;           // [T, B, Hd] dropout on h̃, or undefined
};

// -> h̃ [T, B, Hd]. Differentiable op "luong_decoder" (gradients for emb, keys,
// values, h0, c0 and every weight). Throws std::invalid_argument naming the
// shapes when they do not fit.
Tensor luong_decoder(const LuongLoopInputs& in, const LuongLoopWeights& w);

}  // namespace attn::models
