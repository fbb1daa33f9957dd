#include "attn/image/image.h"

#include <stdexcept>
#include <string>

namespace attn::image {

Tensor to_tensor(const Image& img, const Normalization& norm) {
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * size_t(img.height) * 3)
    throw std::invalid_argument("to_tensor: empty or inconsistent image (" + std::to_string(img.width) + " x " +
                                std::to_string(img.height) + ", " + std::to_string(img.rgb.size()) + " values)");
  for (int c = 0; c < 3; ++c)
    if (!(norm.std[size_t(c)] > 0.0f))
      throw std::invalid_argument("to_tensor: the std of channel " + std::to_string(c) + " must be positive, got " +
                                  std::to_string(norm.std[size_t(c)]));
  const int64_t plane = int64_t(img.width) * img.height;
  Tensor out = Tensor::empty(Shape{3, img.height, img.width});
  float* o = out.data();
  for (int c = 0; c < 3; ++c) {
    const float mean = norm.mean[size_t(c)], inv_std = 1.0f / norm.std[size_t(c)];
    float* dst = o + c * plane;
    for (int64_t p = 0; p < plane; ++p) dst[p] = (img.rgb[size_t(p) * 3 + size_t(c)] - mean) * inv_std;
  }
  return out;
}

}  // namespace attn::image
