// Image files: PNG (libpng) and JPEG (libjpeg-turbo) read into an RGB Image,
// PNG written.
//
// Reading converts whatever the file holds to 8-bit RGB first: grey, grey +
// alpha, palette, 16-bit and alpha PNGs (alpha composited over white), grey,
// YCbCr, RGB, CMYK and YCCK JPEGs (Adobe's inverted CMYK as Photoshop writes
// it). A file that cannot be read whole is an error, never a partial image:
// every failure throws std::runtime_error whose message starts with the path
// ("photo.jpg: JPEG: Premature end of JPEG file", "x.gif: not a PNG or JPEG
// file (starts with 47 49 46 38)").
#pragma once
#include <stdexcept>
#include <string>

#include "attn/image/image.h"

namespace attn::image {

// A picture whose header declares more pixels than the reader's max_pixels
// (a decompression bomb, or just too large): a server answers it 413.
class ImageSizeError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The most pixels (width * height) a file may declare: a guard against a
// corrupt or hostile header asking for gigabytes.
constexpr long long kMaxPixels = 100'000'000;

// A PNG or JPEG file, told apart by its first bytes (not by its name). An
// empty path is std::invalid_argument "image path: empty ..." (a caller's
// mistake, e.g. an empty input line, which the caller names).
Image read_image(const std::string& path);

// `bytes` decoded as the format its first bytes name; `name` is what errors
// start with (a file name, "upload", ...). A picture of more than `max_pixels`
// (its header's width * height) is refused before its pixels are decoded: a
// server taking uploads sets it lower than kMaxPixels, because a small file can
// declare a large picture): ImageSizeError.
Image decode_image(const std::string& bytes, const std::string& name, long long max_pixels = kMaxPixels);
Image decode_png(const std::string& bytes, const std::string& name, long long max_pixels = kMaxPixels);
Image decode_jpeg(const std::string& bytes, const std::string& name, long long max_pixels = kMaxPixels);

// A progressive JPEG of more scans than this is refused: each scan rereads the
// whole coefficient buffer, so a small file of thousands of scans would take
// minutes (libjpeg-turbo's own TJFLAG_LIMITSCANS uses 500).
constexpr int kMaxJpegScans = 500;

// The image as an 8-bit RGB PNG (values clamped to [0, 1], rounded to the nearest of 256 levels).
std::string encode_png(const Image& img);

// encode_png written to `path` atomically (temporary file beside it, renamed
// into place); `durable` also fsyncs (tensor/safetensors.h's write_file_atomic).
void write_png(const std::string& path, const Image& img, bool durable = true);

}  // namespace attn::image
