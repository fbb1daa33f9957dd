// Resizing images: bilinear, with pixel centres at half-integers (PyTorch's
// align_corners=False, PIL's BILINEAR). Shrinking widens the triangle filter by
// the shrink factor (PIL, and torch's antialias=True), so every source pixel
// counts and a fine texture averages out instead of aliasing into stripes.
#pragma once
#include "attn/image/image.h"

namespace attn::image {

// `img` resampled to width x height. Throws std::invalid_argument when a size
// is not positive or the image is empty.
Image resize_bilinear(const Image& img, int width, int height);

}  // namespace attn::image
