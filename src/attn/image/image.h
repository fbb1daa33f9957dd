// Images as the rest of attn sees them: RGB, float, values in [0, 1], and the
// step from there to a model's input, a normalised [3, H, W] tensor.
//
// The files (PNG, JPEG) are read and written by codec.h; resize.h changes the
// size. Every image, whatever its file held (grey, palette, alpha, 16 bits,
// CMYK), is RGB by the time it is an Image.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::image {

struct Image {
  int width = 0, height = 0;
  std::vector<float> rgb;  // [height, width, 3], row-major, channel fastest, in [0, 1]

  Image() = default;
  Image(int w, int h, float fill = 0.0f) : width(w), height(h), rgb(size_t(w) * size_t(h) * 3, fill) {}
  float& at(int y, int x, int c) { return rgb[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)]; }
  float at(int y, int x, int c) const { return rgb[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)]; }
};

// Per-channel statistics a model's input is normalised with: (value - mean) / std.
struct Normalization {
  std::array<float, 3> mean{0.0f, 0.0f, 0.0f};
  std::array<float, 3> std{1.0f, 1.0f, 1.0f};
};

// The statistics torchvision's ImageNet models expect (values in [0, 1]).
inline Normalization imagenet_normalization() { return {{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}}; }

// The image as a model input: [3, height, width], channel-major (as PyTorch's
// CHW), each value (v - mean[c]) / std[c]. Throws std::invalid_argument when
// the image is empty or a std is not positive.
Tensor to_tensor(const Image& img, const Normalization& norm = {});

}  // namespace attn::image
