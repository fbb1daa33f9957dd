// The Transformer's position-wise feed-forward network (Vaswani et al. 2017,
// "Attention Is All You Need", sec. 3.3): FFN(x) = act(x W1^T + b1) W2^T + b2,
// applied to every position alike, with dropout on the activation as PyTorch's
// nn.TransformerEncoderLayer places it.
//
// Legend: B batch, L length, E model size (d_model), F feed-forward size.
#pragma once
#include "attn/autograd/ops.h"
#include "attn/nn/hashed_dropout.h"
#include "attn/nn/layers.h"

namespace attn::nn {

// x [B, L, E] -> linear2(dropout(act(linear1(x)))) [B, L, E].
// linear1: weight [F, E], bias [F]; linear2: weight [E, F], bias [E]. The first
// product, its bias and the activation are one op (linear_act); `dropout` is
// active in its own training mode and draws from its own stream.
Tensor feed_forward(const Tensor& x, const Linear& linear1, const Linear& linear2, Activation act, const HashedDropout& dropout);

}  // namespace attn::nn
