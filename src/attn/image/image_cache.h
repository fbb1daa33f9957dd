// Images decoded and resized once, kept as bytes: a captioning run reads every
// training image many times, and decoding a PNG costs far more than turning
// 3 * H * W bytes back into floats.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/image/image.h"

namespace attn::image {

class ImageCache {
public:
  // Reads every file of `paths` (PNG or JPEG, codec.h), resizes it to
  // size x size (resize.h; aspect ratio not kept) and keeps it as bytes
  // [N, 3, size, size]. Files are decoded in parallel (OpenMP); the cache does
  // not depend on the thread count. Throws std::runtime_error naming the first
  // unreadable file (in path order).
  ImageCache(const std::vector<std::string>& paths, int size);

  // The images `slots` (indices into paths) as a model input [B, 3, size, size],
  // each value (byte / 255 - norm.mean[c]) / norm.std[c] (image.h's to_tensor).
  Tensor batch(const std::vector<int64_t>& slots, const Normalization& norm) const;

  int64_t size() const { return count_; }
  int image_size() const { return size_; }

private:
  int size_ = 0;
  int64_t count_ = 0;
  std::vector<uint8_t> bytes_;  // [N, 3, size, size]
};

}  // namespace attn::image
