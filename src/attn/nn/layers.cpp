#include "attn/nn/layers.h"

#include <cmath>
#include <cstring>

namespace attn::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias, Rng& rng) {
  float bound = 1.0f / std::sqrt(float(in));
  weight = register_parameter("weight", rand_uniform({out, in}, rng, -bound, bound));
  if (with_bias) bias = register_parameter("bias", rand_uniform({out}, rng, -bound, bound));
}

Embedding::Embedding(int64_t num, int64_t dim, int64_t pad, Rng& rng) : padding_idx(pad) {
  Tensor w = randn({num, dim}, rng);
  if (pad >= 0) std::memset(w.data() + pad * dim, 0, size_t(dim) * sizeof(float));
  weight = register_parameter("weight", w);
}

LayerNorm::LayerNorm(int64_t dim, float e) : eps(e) {
  weight = register_parameter("weight", Tensor::ones({dim}));
  bias = register_parameter("bias", Tensor::zeros({dim}));
}

}  // namespace attn::nn
