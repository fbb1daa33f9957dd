// Fuzz target: image bytes decoded from memory (image/codec.h decode_image),
// what `attn serve` does with an uploaded body (POST /v1/caption, an image's
// POST /v1/explain), then resized and normalised for a model as the server
// does (image/input.h picture_input). The whole input is the file.
#include <cmath>
#include <cstdlib>

#include "attn/image/codec.h"
#include "attn/image/input.h"
#include "fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attn;
  constexpr long long kMaxPixels = 2048LL * 2048;  // `attn serve`'s --max-image-pixels default
  const std::string bytes(fuzz::as_view(data, size));
  image::Image img;
  try {
    img = image::decode_image(bytes, "fuzz", kMaxPixels);
  } catch (const std::runtime_error&) {
    return 0;  // refused with a message (the server: 400, or 413 for ImageSizeError)
  }
  // a decoded picture is whole: its declared size, every value a colour in [0, 1]
  if (img.width < 1 || img.height < 1 || (long long)img.width * img.height > kMaxPixels) std::abort();
  if (img.rgb.size() != size_t(img.width) * size_t(img.height) * 3) std::abort();
  for (float v : img.rgb)
    if (!(v >= 0.0f && v <= 1.0f)) std::abort();
  const Tensor t = image::picture_input(img, 8, 6, image::imagenet_normalization());
  if (t.shape() != Shape({3, 6, 8})) std::abort();
  for (int64_t i = 0; i < t.numel(); ++i)
    if (!std::isfinite(t.data()[i])) std::abort();
  return 0;
}
