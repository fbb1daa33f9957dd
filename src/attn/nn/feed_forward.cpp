#include "attn/nn/feed_forward.h"

namespace attn::nn {

Tensor feed_forward(const Tensor& x, const Linear& linear1, const Linear& linear2, Activation act, const HashedDropout& dropout) {
  Tensor hidden = linear_act(x, linear1.weight, linear1.bias, act);  // [B, L, F]
  return linear2.forward(dropout.forward(hidden));                   // [B, L, E]
}

}  // namespace attn::nn
