#include "attn/nn/cnn_encoder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attn::nn {

CnnBlock::CnnBlock(int64_t in, int64_t out, const CnnEncoderOptions& opt, bool pooled, Rng& rng)
    : pool(opt.pool), pooled(pooled) {
  conv = register_module("conv", std::make_shared<Conv2d>(in, out, opt.kernel, 1, opt.kernel / 2, false, rng));
  norm = register_module("norm", std::make_shared<GroupNorm>(opt.groups, out));
}

Tensor CnnBlock::forward(const Tensor& x) const {
  Tensor y = relu(norm->forward(conv->forward(x)));
  return pooled ? pool.forward(y) : y;
}

CnnEncoder::CnnEncoder(const CnnEncoderOptions& opt, Rng& rng) : opt_(opt) {
  if (opt.channels.empty()) throw std::invalid_argument("CnnEncoder: channels is empty (one entry per block)");
  if (opt.kernel < 1 || opt.kernel % 2 == 0)
    throw std::invalid_argument("CnnEncoder: kernel " + std::to_string(opt.kernel) + " (must be odd, so padding keeps H, W)");
  if (opt.pool < 1) throw std::invalid_argument("CnnEncoder: pool " + std::to_string(opt.pool) + " (must be >= 1)");
  if (opt.context_blocks < 0)
    throw std::invalid_argument("CnnEncoder: context_blocks " + std::to_string(opt.context_blocks) + " (must be >= 0)");
  int64_t in = opt.in_channels;
  const size_t pooling = opt.channels.size(), total = pooling + size_t(opt.context_blocks);
  for (size_t i = 0; i < total; ++i) {
    const int64_t out = opt.channels[std::min(i, pooling - 1)];
    blocks.push_back(register_module("blocks." + std::to_string(i), std::make_shared<CnnBlock>(in, out, opt, i < pooling, rng)));
    in = out;
  }
}

std::pair<int64_t, int64_t> CnnEncoder::grid_shape(int64_t height, int64_t width) const {
  for (size_t i = 0; i < opt_.channels.size(); ++i) {
    height /= opt_.pool;
    width /= opt_.pool;
  }
  return {height, width};
}

Tensor CnnEncoder::forward(const Tensor& images) const {
  if (images.dim() != 4 || images.size(1) != opt_.in_channels)
    throw std::invalid_argument("CnnEncoder: images " + shape_str(images) + " (expects [batch, " +
                                std::to_string(opt_.in_channels) + ", H, W])");
  auto [gh, gw] = grid_shape(images.size(2), images.size(3));
  if (gh < 1 || gw < 1)
    throw std::invalid_argument("CnnEncoder: images " + images.shape().str() + " too small for " +
                                std::to_string(blocks.size()) + " blocks pooling by " + std::to_string(opt_.pool));
  Tensor x = images;
  for (const auto& block : blocks) x = block->forward(x);
  // [batch, D, Gh, Gw] -> [batch, D, Gh*Gw] -> [batch, Gh*Gw, D]
  const int64_t batch = x.size(0), d = x.size(1);
  return permute(reshape(x, {batch, d, gh * gw}), {0, 2, 1});
}

}  // namespace attn::nn
