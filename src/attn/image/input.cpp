#include "attn/image/input.h"

#include "attn/image/codec.h"
#include "attn/image/resize.h"

namespace attn::image {

Tensor load_input(const std::string& path, int width, int height, const Normalization& norm) {
  return picture_input(read_image(path), width, height, norm);
}

Tensor picture_input(const Image& img, int width, int height, const Normalization& norm) {
  if (img.width == width && img.height == height) return to_tensor(img, norm);
  return to_tensor(resize_bilinear(img, width, height), norm);
}

}  // namespace attn::image
