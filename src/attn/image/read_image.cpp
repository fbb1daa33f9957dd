// Image files told apart by their first bytes, so a JPEG saved as .png (common
// in scraped data sets) still reads.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "attn/image/codec.h"

namespace attn::image {
namespace {

bool starts_with(const std::string& bytes, const char* magic, size_t n) {
  return bytes.size() >= n && bytes.compare(0, n, magic, n) == 0;
}

std::string first_bytes_hex(const std::string& bytes) {
  std::string out;
  char buf[4];
  for (size_t i = 0; i < bytes.size() && i < 4; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", unsigned(static_cast<unsigned char>(bytes[i])));
    if (i) out += ' ';
    out += buf;
  }
  return out;
}

}  // namespace

Image decode_image(const std::string& bytes, const std::string& name, long long max_pixels) {
  if (starts_with(bytes, "\x89PNG\r\n\x1a\n", 8)) return decode_png(bytes, name, max_pixels);
  if (starts_with(bytes, "\xff\xd8\xff", 3)) return decode_jpeg(bytes, name, max_pixels);
  if (bytes.empty()) throw std::runtime_error(name + ": empty file, not a PNG or JPEG image");
  throw std::runtime_error(name + ": not a PNG or JPEG file (starts with " + first_bytes_hex(bytes) + ")");
}

Image read_image(const std::string& path) {
  // (an empty line of image paths on stdin came here and said ": cannot open")
  if (path.empty()) throw std::invalid_argument("image path: empty (expected a PNG or JPEG file)");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw std::runtime_error(path + ": is a folder, not an image file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open");
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw std::runtime_error(path + ": read error");
  return decode_image(buf.str(), path);
}

}  // namespace attn::image
