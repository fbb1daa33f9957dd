#include "attn/nn/positional_embedding.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/autograd/ops.h"

namespace attn::nn {

LearnedPositionalEmbedding::LearnedPositionalEmbedding(int64_t dim, int64_t max_len, float p, Rng& rng) : dropout(p) {
  if (dim <= 0 || max_len <= 0 || !(p >= 0.0f && p < 1.0f))
    throw std::invalid_argument("LearnedPositionalEmbedding: dim " + std::to_string(dim) + ", max_len " +
                                std::to_string(max_len) + ", dropout " + std::to_string(p));
  weight = register_parameter("weight", randn({max_len, dim}, rng, 1.0f / std::sqrt(float(dim))));
  rng_ = &register_rng("dropout_rng", dropout_seed(p, rng));
}

Tensor LearnedPositionalEmbedding::forward(const Tensor& x, int64_t start) const {
  if (!x.defined() || x.dim() != 3 || x.size(2) != weight.size(1) || start < 0 || start + x.size(1) > weight.size(0))
    throw std::invalid_argument("LearnedPositionalEmbedding: input " + x.shape().str() + " from position " +
                                std::to_string(start) + " for weight " + weight.shape().str() +
                                " (expects [B, L, E] with start + L <= max_len)");
  Tensor positions = slice(weight, 0, start, x.size(1));  // [L, E], broadcast over the batch; its gradient sums over it
  return attn::dropout(add(x, positions), dropout, is_training(), *rng_);
}

}  // namespace attn::nn
