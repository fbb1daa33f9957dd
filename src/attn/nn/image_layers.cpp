#include "attn/nn/image_layers.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace attn::nn {

Conv2d::Conv2d(int64_t in, int64_t out, int64_t kernel, int64_t s, int64_t p, bool with_bias, Rng& rng)
    : stride(s), padding(p) {
  if (in < 1 || out < 1 || kernel < 1)
    throw std::invalid_argument("Conv2d: in_channels " + std::to_string(in) + ", out_channels " + std::to_string(out) +
                                ", kernel " + std::to_string(kernel) + " (each >= 1)");
  float bound = 1.0f / std::sqrt(float(in * kernel * kernel));
  weight = register_parameter("weight", rand_uniform({out, in, kernel, kernel}, rng, -bound, bound));
  if (with_bias) bias = register_parameter("bias", rand_uniform({out}, rng, -bound, bound));
}

GroupNorm::GroupNorm(int64_t g, int64_t channels, float e) : groups(g), eps(e) {
  if (g < 1 || channels % g != 0)
    throw std::invalid_argument("GroupNorm: " + std::to_string(channels) + " channels in " + std::to_string(g) +
                                " groups (channels must be a multiple of groups)");
  weight = register_parameter("weight", Tensor::ones({channels}));
  bias = register_parameter("bias", Tensor::zeros({channels}));
}

}  // namespace attn::nn
