#include "attn/image/input.h"

#include "attn/image/codec.h"
#include "attn/image/resize.h"

namespace attn::image {

Tensor load_input(const std::string& path, int width, int height, const Normalization& norm) {
  Image img = read_image(path);
  if (img.width != width || img.height != height) img = resize_bilinear(img, width, height);
  return to_tensor(img, norm);
}

}  // namespace attn::image
