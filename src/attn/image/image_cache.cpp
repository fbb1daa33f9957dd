#include "attn/image/image_cache.h"

#include <cmath>
#include <stdexcept>

#include "attn/image/codec.h"
#include "attn/image/resize.h"

namespace attn::image {

ImageCache::ImageCache(const std::vector<std::string>& paths, int size) : size_(size), count_(int64_t(paths.size())) {
  if (size < 1) throw std::invalid_argument("ImageCache: size " + std::to_string(size) + " must be >= 1");
  const int64_t plane = int64_t(size) * size;
  bytes_.resize(size_t(count_ * 3 * plane));
  std::vector<std::string> errors(paths.size());
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t i = 0; i < count_; ++i) {
    try {
      const Image img = resize_bilinear(read_image(paths[size_t(i)]), size, size);
      uint8_t* out = bytes_.data() + i * 3 * plane;
      for (int64_t p = 0; p < plane; ++p)
        for (int c = 0; c < 3; ++c) {
          const float v = std::round(img.rgb[size_t(p * 3 + c)] * 255.0f);
          out[c * plane + p] = uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
        }
    } catch (const std::exception& e) {
      errors[size_t(i)] = e.what();
    }
  }
  for (const std::string& e : errors)
    if (!e.empty()) throw std::runtime_error(e);
}

Tensor ImageCache::batch(const std::vector<int64_t>& slots, const Normalization& norm) const {
  const int64_t plane = int64_t(size_) * size_, B = int64_t(slots.size());
  float table[3][256];  // byte -> normalised value, per channel
  for (int c = 0; c < 3; ++c) {
    if (!(norm.std[size_t(c)] > 0)) throw std::invalid_argument("ImageCache::batch: std must be > 0");
    for (int v = 0; v < 256; ++v) table[c][v] = (float(v) / 255.0f - norm.mean[size_t(c)]) / norm.std[size_t(c)];
  }
  Tensor out = Tensor::empty({B, 3, size_, size_});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t s = slots[size_t(b)];
    if (s < 0 || s >= count_)
      throw std::invalid_argument("ImageCache::batch: slot " + std::to_string(s) + " outside [0, " +
                                  std::to_string(count_) + ")");
    const uint8_t* in = bytes_.data() + s * 3 * plane;
    float* o = out.data() + b * 3 * plane;
    for (int c = 0; c < 3; ++c)
      for (int64_t p = 0; p < plane; ++p) o[c * plane + p] = table[c][in[c * plane + p]];
  }
  return out;
}

}  // namespace attn::image
