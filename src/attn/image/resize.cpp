#include "attn/image/resize.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

namespace attn::image {
namespace {

// The source pixels and weights of each output pixel along one axis.
struct AxisWeights {
  std::vector<int> first;              // [out] first source pixel
  std::vector<std::vector<float>> w;   // [out][taps] weights of first, first + 1, ... (sum 1)
};

AxisWeights axis_weights(int in, int out) {
  const double scale = double(in) / double(out);
  const double support = std::max(scale, 1.0);  // triangle half-width in source pixels
  AxisWeights a;
  a.first.resize(size_t(out));
  a.w.resize(size_t(out));
  for (int i = 0; i < out; ++i) {
    const double centre = (i + 0.5) * scale;  // in source pixel units, pixel j spans [j, j + 1)
    const int lo = std::max(0, int(std::floor(centre - support)));
    const int hi = std::min(in - 1, int(std::ceil(centre + support)));
    std::vector<float> w;
    double total = 0;
    for (int j = lo; j <= hi; ++j) {
      const double v = std::max(0.0, 1.0 - std::abs(j + 0.5 - centre) / support);
      w.push_back(float(v));
      total += v;
    }
    // near a border the missing taps' share goes to the pixels inside (PyTorch clamps the same way)
    for (float& v : w) v = float(v / total);
    a.first[size_t(i)] = lo;
    a.w[size_t(i)] = std::move(w);
  }
  return a;
}

}  // namespace

Image resize_bilinear(const Image& img, int width, int height) {
  if (width <= 0 || height <= 0)
    throw std::invalid_argument("resize_bilinear: target size must be positive, got " + std::to_string(width) + " x " +
                                std::to_string(height));
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * size_t(img.height) * 3)
    throw std::invalid_argument("resize_bilinear: empty or inconsistent image");
  const AxisWeights ax = axis_weights(img.width, width), ay = axis_weights(img.height, height);
  // horizontal pass: [img.height, width, 3]
  Image mid(width, img.height);
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < width; ++x) {
      const std::vector<float>& w = ax.w[size_t(x)];
      for (int c = 0; c < 3; ++c) {
        float s = 0;
        for (size_t t = 0; t < w.size(); ++t) s += w[t] * img.at(y, ax.first[size_t(x)] + int(t), c);
        mid.at(y, x, c) = s;
      }
    }
  // vertical pass: [height, width, 3]
  Image out(width, height);
  for (int y = 0; y < height; ++y) {
    const std::vector<float>& w = ay.w[size_t(y)];
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) {
        float s = 0;
        for (size_t t = 0; t < w.size(); ++t) s += w[t] * mid.at(ay.first[size_t(y)] + int(t), x, c);
        out.at(y, x, c) = s;
      }
  }
  return out;
}

}  // namespace attn::image
