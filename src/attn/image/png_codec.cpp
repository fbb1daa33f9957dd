// PNG through libpng's simplified API: it converts every colour type and bit
// depth to the 8-bit RGB asked for, and reports errors as text instead of a
// longjmp, so no C++ frame is ever skipped.
#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "attn/image/codec.h"
#include "attn/tensor/safetensors.h"

namespace attn::image {

namespace {

// Every chunk after the signature must fit in the bytes that remain (up to
// IEND). libpng allocates an ancillary chunk's declared length before it reads
// the chunk, and Debian's build sets no limit: a 220-byte file whose iTXt chunk
// declared 1.7 GB took 1.7 GB and 2 s before libpng found the data short (the
// image fuzzer, 2026-11-28). Throws std::runtime_error naming the chunk.
void check_chunks_fit(const std::string& bytes, const std::string& name) {
  size_t at = 8;  // the signature; libpng checks it
  while (at + 8 <= bytes.size()) {
    uint32_t len = 0;
    for (int i = 0; i < 4; ++i) len = (len << 8) | uint8_t(bytes[at + size_t(i)]);
    const std::string type = bytes.substr(at + 4, 4);
    const size_t left = bytes.size() - at - 8;  // after the length and type
    if (size_t(len) + 4 > left)                 // + the CRC
      throw std::runtime_error(name + ": PNG: chunk \"" + type + "\" at byte " + std::to_string(at) + " declares " +
                               std::to_string(len) + " bytes, the file has " + std::to_string(left) +
                               " after its header");
    if (type == "IEND") return;
    at += 12 + size_t(len);
  }
}

}  // namespace

Image decode_png(const std::string& bytes, const std::string& name, long long max_pixels) {
  check_chunks_fit(bytes, name);
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&png, bytes.data(), bytes.size()))
    throw std::runtime_error(name + ": PNG: " + png.message);
  // A 16-bit file without gAMA/sRGB holds sRGB values like an 8-bit one (what
  // every viewer assumes), not linear light as libpng would otherwise take it.
  // (Set after begin_read, which rewrites the flags from the file's header.)
  png.flags |= PNG_IMAGE_FLAG_16BIT_sRGB;
  const long long pixels_declared = (long long)png.width * (long long)png.height;
  if (png.width == 0 || png.height == 0 || pixels_declared > max_pixels) {
    const std::string message = name + ": PNG: unsupported size " + std::to_string(png.width) + " x " +
                                std::to_string(png.height) + " (1 to " + std::to_string(max_pixels) + " pixels)";
    png_image_free(&png);
    if (pixels_declared > max_pixels) throw ImageSizeError(message);
    throw std::runtime_error(message);
  }
  const bool has_alpha = png.format & PNG_FORMAT_FLAG_ALPHA;
  png.format = PNG_FORMAT_RGB;
  // libpng composites a removed alpha channel onto what the buffer holds: white
  std::vector<uint8_t> pixels(PNG_IMAGE_SIZE(png), has_alpha ? 255 : 0);
  if (!png_image_finish_read(&png, nullptr, pixels.data(), 0, nullptr))
    throw std::runtime_error(name + ": PNG: " + png.message);
  Image img(int(png.width), int(png.height));
  for (size_t i = 0; i < pixels.size(); ++i) img.rgb[i] = float(pixels[i]) / 255.0f;
  return img;
}

std::string encode_png(const Image& img) {
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * size_t(img.height) * 3)
    throw std::invalid_argument("encode_png: empty or inconsistent image (" + std::to_string(img.width) + " x " +
                                std::to_string(img.height) + ")");
  std::vector<uint8_t> pixels(img.rgb.size());
  for (size_t i = 0; i < pixels.size(); ++i) {
    const float v = std::isfinite(img.rgb[i]) ? std::clamp(img.rgb[i], 0.0f, 1.0f) : 0.0f;
    pixels[i] = uint8_t(std::lround(v * 255.0f));
  }
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = png_uint_32(img.width);
  png.height = png_uint_32(img.height);
  png.format = PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  // first call: the size the encoded file needs; second: the encoding
  if (!png_image_write_to_memory(&png, nullptr, &size, 0, pixels.data(), 0, nullptr))
    throw std::runtime_error(std::string("encode_png: ") + png.message);
  std::string out(size, '\0');
  if (!png_image_write_to_memory(&png, out.data(), &size, 0, pixels.data(), 0, nullptr))
    throw std::runtime_error(std::string("encode_png: ") + png.message);
  out.resize(size);
  return out;
}

void write_png(const std::string& path, const Image& img, bool durable) {
  write_file_atomic(path, encode_png(img), durable);
}

}  // namespace attn::image
