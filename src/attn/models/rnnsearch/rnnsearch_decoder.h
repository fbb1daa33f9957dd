// RNNsearch's teacher-forced decoder loop as one fused op (training path).
//
// Legend: T target steps, B batch, S source length, E embedding, Dv
// annotation size, A attention size, Hd decoder size.
//
// For t = 0 .. T-1, with s_{-1} = s0 (Bahdanau et al. 2015, appendix A):
//   e_tj = v^T tanh(W1 s_{t-1} + kp_j)   a_t = softmax_j(e_t) over j < length
//   c_t  = sum_j a_tj h_j
//   s_t  = GRU([emb_t; c_t], s_{t-1})    (PyTorch's GRU equations, kernels/rnn_gates.h)
// Outputs states s_0..s_{T-1} [T, B, Hd] and contexts c_0..c_{T-1} [T, B, Dv].
//
// It computes exactly what T calls of attention::additive_step + concat + the
// fused "gru" op compute (tests/test_models.cpp holds them equal), but:
//  - the embedding half of the GRU input projection is one GEMM for all
//    steps before the loop; each step multiplies only c_t;
//  - forward saves per step only the gates, W_hn s + b_hn, W1 s and the
//    weights; nothing is allocated inside the loop;
//  - backward accumulates d(keys) and d(values) in place over the steps, and
//    computes dW_ih, dW_hh, dW1, the biases and d(emb) as one GEMM each over
//    all T * B rows after the loop, instead of T small ones plus T additions.
#pragma once
#include "attn/autograd/ops.h"

namespace attn::models {

struct DecoderLoopWeights {
  Tensor W1;    // [A, Hd]  the query projection of the additive score
  Tensor v;     // [A]
  Tensor w_ih;  // [3 Hd, E + Dv]  the GRU cell's input weights (columns: embedding, then context)
  Tensor w_hh;  // [3 Hd, Hd]
  Tensor b_ih;  // [3 Hd]
  Tensor b_hh;  // [3 Hd]
};

struct DecoderLoopOutput {
  Tensor states;    // [T, B, Hd]  s_0 .. s_{T-1}
  Tensor contexts;  // [T, B, Dv]  c_0 .. c_{T-1}
};

// emb [T, B, E], keys [B, S, A] (U h + b_U), values [B, S, Dv], lengths [B]
// (float-encoded, in [0, S]; a length-0 row attends to nothing), s0 [B, Hd]. Differentiable op "rnnsearch_decoder"
// (gradients for emb, keys, values, s0 and every weight). Throws
// std::invalid_argument naming the shapes when they do not fit.
DecoderLoopOutput rnnsearch_decoder(const Tensor& emb, const Tensor& keys, const Tensor& values, const Tensor& lengths,
                                    const Tensor& s0, const DecoderLoopWeights& w);

}  // namespace attn::models
