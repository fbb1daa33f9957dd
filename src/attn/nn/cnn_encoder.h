// A small CNN that turns images into a grid of annotation vectors, the
// "annotations" a captioning decoder attends over (Xu et al. 2015, where a
// VGG's 14x14 conv map plays this part).
#pragma once
#include <memory>
#include <utility>
#include <vector>

#include "attn/nn/image_layers.h"

namespace attn::nn {

struct CnnEncoderOptions {
  int64_t in_channels = 3;                     // RGB
  std::vector<int64_t> channels = {32, 64, 128};  // one block per entry; the last is D
  int64_t kernel = 3;                          // odd: padding kernel/2 keeps H and W
  int64_t groups = 8;                          // GroupNorm groups; every entry of channels a multiple
  int64_t pool = 2;                            // max-pool kernel = stride after every block
  // Blocks after the pooling ones, at the grid's resolution (conv, norm, ReLU,
  // no pool; channels.back() in and out). Each widens a cell's receptive field
  // by (kernel - 1) cells without shrinking the grid, so that the cell at an
  // object's centre sees its whole outline (what a shape word needs).
  int64_t context_blocks = 0;
};

// One block: conv (kernel, stride 1, padding kernel/2, no bias: the norm's bias
// follows) -> GroupNorm -> ReLU -> max-pool (none for a context block).
// Parameters "conv.weight", "norm.weight", "norm.bias".
class CnnBlock : public Module {
public:
  CnnBlock(int64_t in_channels, int64_t out_channels, const CnnEncoderOptions& opt, bool pooled, Rng& rng);
  // x [batch, in_ch, H, W] -> [batch, out_ch, H / pool, W / pool] (floor; H, W when not pooled)
  Tensor forward(const Tensor& x) const;
  std::shared_ptr<Conv2d> conv;
  std::shared_ptr<GroupNorm> norm;
  MaxPool2d pool;
  bool pooled;
};

// Blocks "blocks.0", "blocks.1", ... (torch: a ModuleList of modules with
// `conv` and `norm`), so parameters are named "blocks.<i>.conv.weight" etc.;
// the context blocks follow the pooling ones.
// With 3 blocks and pool 2, 64x64 images give an 8x8 grid, 24x24 images the
// seed walk-through's 3x3.
class CnnEncoder : public Module {
public:
  CnnEncoder(const CnnEncoderOptions& opt, Rng& rng);
  // images [batch, in_channels, H, W] -> annotations [batch, Gh*Gw, D]: cell
  // g = row*Gw + col of the final feature map (row-major over the image: cell 0
  // is the top-left corner), D = channels.back(). Throws naming the shape when
  // the image has the wrong channels or is too small for the blocks.
  Tensor forward(const Tensor& images) const;
  // The grid {Gh, Gw} for H x W images (H and W divided by pool once per pooling block, floor).
  std::pair<int64_t, int64_t> grid_shape(int64_t height, int64_t width) const;
  int64_t feature_dim() const { return opt_.channels.back(); }
  const CnnEncoderOptions& options() const { return opt_; }
  std::vector<std::shared_ptr<CnnBlock>> blocks;

private:
  CnnEncoderOptions opt_;
};

}  // namespace attn::nn
