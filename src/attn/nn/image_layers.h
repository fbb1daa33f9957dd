// Image layers over [batch, channels, H, W], with PyTorch's parameter names.
#pragma once
#include "attn/autograd/ops.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::nn {

// 2-D convolution. weight [out_ch, in_ch, kernel, kernel], bias [out_ch] (or
// none). Init as PyTorch: U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for both, fan_in =
// in_ch * kernel * kernel.
class Conv2d : public Module {
public:
  Conv2d(int64_t in_channels, int64_t out_channels, int64_t kernel, int64_t stride, int64_t padding, bool bias, Rng& rng);
  // x [batch, in_ch, H, W] -> [batch, out_ch, (H + 2*padding - kernel)/stride + 1, likewise W]
  Tensor forward(const Tensor& x) const { return conv2d(x, weight, bias, stride, padding); }
  Tensor weight, bias;  // bias undefined when built without
  int64_t stride, padding;
};

// Max pooling, no parameters. x [batch, ch, H, W] -> [batch, ch, (H - kernel)/stride + 1, likewise W]
class MaxPool2d : public Module {
public:
  explicit MaxPool2d(int64_t kernel, int64_t stride = 0) : kernel(kernel), stride(stride ? stride : kernel) {}
  Tensor forward(const Tensor& x) const { return max_pool2d(x, kernel, stride); }
  int64_t kernel, stride;
};

// Group normalisation; weight (ones) and bias (zeros) [channels].
// Why GroupNorm rather than BatchNorm2d: its statistics come from one image
// alone, so there are no running averages to keep, save in checkpoints and
// switch between in training and evaluation, and an image is encoded the same
// way alone, in a training batch or beside the other hypotheses of a beam
// search. BatchNorm2d (VGG / ResNet) needs large batches for stable
// statistics, which a 2-core CPU trainer does not have.
class GroupNorm : public Module {
public:
  GroupNorm(int64_t groups, int64_t channels, float eps = 1e-5f);
  // x [batch, channels, H, W] -> same shape
  Tensor forward(const Tensor& x) const { return group_norm(x, groups, weight, bias, eps); }
  Tensor weight, bias;
  int64_t groups;
  float eps;
};

}  // namespace attn::nn
