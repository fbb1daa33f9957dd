// Inverted dropout on the counter-based pattern (autograd/ops_dropout.h): each
// call in training mode draws one seed from the layer's own stream and drops
// element (r, j) by a hash of (seed, r, j). Versus nn::Dropout (layers.h, masks
// drawn element by element from the stream and stored for the backward): runs
// in parallel and keeps nothing of the input's size. The Transformer layers use
// it on every residual branch and on the feed-forward activation.
#pragma once
#include <stdexcept>
#include <string>

#include "attn/autograd/ops_dropout.h"
#include "attn/nn/module.h"

namespace attn::nn {

class HashedDropout : public Module {
public:
  HashedDropout(float p, Rng& rng) : p(p), rng_(&register_rng("dropout_rng", dropout_seed(p, rng))) {
    if (!(p >= 0.0f && p < 1.0f)) throw std::invalid_argument("HashedDropout: p = " + std::to_string(p) + " outside [0, 1)");
  }
  // x [N..., n] -> x with elements zeroed with probability p, the rest scaled by
  // 1/(1-p); the identity in eval mode or with p == 0 (no seed drawn then)
  Tensor forward(const Tensor& x) const {
    if (!is_training() || p == 0.0f) return x;
    return dropout_hashed(x, p, rng_->next_u64());
  }
  float p;

private:
  Rng* rng_;  // the layer's own stream (named_rngs(): "dropout_rng"), one draw per call
};

}  // namespace attn::nn
