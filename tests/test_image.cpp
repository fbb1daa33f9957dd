// image/: PNG and JPEG files the test writes itself (libpng, libjpeg) read into
// RGB in every colour type, corrupt and truncated files refused naming the
// file, the bilinear resize against an independent PyTorch-formula reference,
// and normalisation into [3, H, W].
#include <gtest/gtest.h>
#include <cstdio>  // jpeglib.h needs FILE and size_t declared first
#include <jpeglib.h>
#include <png.h>

#include <cmath>
#include <csetjmp>
#include <filesystem>

#include "attn/image/codec.h"
#include "attn/image/input.h"
#include "attn/image/resize.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::TempDir;
using attn::testing::write_bytes;
using image::Image;  // RGB floats, [height, width, 3]

// A PNG written by libpng's simplified API from 8-bit (or 16-bit linear) pixels.
std::string png_bytes(int w, int h, png_uint_32 format, const void* pixels, const void* colormap = nullptr,
                      int colormap_entries = 0) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = png_uint_32(w), png.height = png_uint_32(h), png.format = format;
  png.colormap_entries = png_uint_32(colormap_entries);
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&png, nullptr, &size, 0, pixels, 0, colormap)) << png.message;
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&png, out.data(), &size, 0, pixels, 0, colormap)) << png.message;
  out.resize(size);
  return out;
}

// A 16-bit grey PNG with no gAMA or sRGB chunk (as most 16-bit files in the
// wild), written with libpng's low-level API, which the simplified one cannot do.
void write_png16_grey(const std::string& path, uint16_t value) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(p);
  if (setjmp(png_jmpbuf(p))) FAIL() << "libpng write failed";
  png_init_io(p, f);
  png_set_IHDR(p, info, 2, 1, 16, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
               PNG_FILTER_TYPE_DEFAULT);
  png_write_info(p, info);
  uint8_t row[4] = {uint8_t(value >> 8), uint8_t(value & 0xff), uint8_t(value >> 8), uint8_t(value & 0xff)};
  png_write_row(p, row);
  png_write_end(p, nullptr);
  png_destroy_write_struct(&p, &info);
  std::fclose(f);
}

// A JPEG of w x h pixels, all `pixel` (components values), in `space`, by libjpeg.
std::string jpeg_bytes(int w, int h, J_COLOR_SPACE space, int components, const std::vector<uint8_t>& pixel) {
  jpeg_compress_struct c{};
  jpeg_error_mgr err{};
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* mem = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &mem, &size);
  c.image_width = JDIMENSION(w), c.image_height = JDIMENSION(h);
  c.input_components = components, c.in_color_space = space;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 100, TRUE);
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row;
  for (int x = 0; x < w; ++x) row.insert(row.end(), pixel.begin(), pixel.end());
  while (c.next_scanline < c.image_height) {
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::string out(reinterpret_cast<char*>(mem), size);
  std::free(mem);
  return out;
}

void expect_rgb(const Image& img, int y, int x, float r, float g, float b, float tol, const std::string& what) {
  EXPECT_NEAR(img.at(y, x, 0), r, tol) << what << " red at (" << x << ", " << y << ")";
  EXPECT_NEAR(img.at(y, x, 1), g, tol) << what << " green";
  EXPECT_NEAR(img.at(y, x, 2), b, tol) << what << " blue";
}

TEST(ImageCodec, PngRoundTripAndAtomicWrite) {
  TempDir dir("image_png");
  Image img(5, 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = float((x * 37 + y * 11 + c * 89) % 256) / 255.0f;
  img.at(0, 0, 0) = 1.7f;   // clamped to 1
  img.at(0, 0, 1) = -0.3f;  // clamped to 0
  const std::string path = dir.path + "/a.png";
  image::write_png(path, img);
  const Image back = image::read_image(path);
  ASSERT_EQ(back.width, 5);
  ASSERT_EQ(back.height, 3);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 3; ++c)
        EXPECT_EQ(back.at(y, x, c), std::clamp(img.at(y, x, c), 0.0f, 1.0f)) << x << "," << y << "," << c;
  const auto files = std::distance(std::filesystem::directory_iterator(dir.path), std::filesystem::directory_iterator());
  EXPECT_EQ(files, 1) << "no temporary file left beside a.png";
}

TEST(ImageCodec, PngColourTypesBecomeRgb) {
  TempDir dir("image_png_types");
  const std::string p = dir.path + "/t.png";
  const uint8_t grey[2] = {0, 100};
  write_bytes(p, png_bytes(2, 1, PNG_FORMAT_GRAY, grey));
  Image img = image::read_image(p);
  expect_rgb(img, 0, 1, 100 / 255.f, 100 / 255.f, 100 / 255.f, 1e-6f, "grey");
  // alpha: transparent becomes white (composited over white), opaque keeps its colour
  const uint8_t rgba[8] = {255, 0, 0, 0, 0, 0, 255, 255};
  write_bytes(p, png_bytes(2, 1, PNG_FORMAT_RGBA, rgba));
  img = image::read_image(p);
  expect_rgb(img, 0, 0, 1, 1, 1, 1e-6f, "transparent red");
  expect_rgb(img, 0, 1, 0, 0, 1, 1e-6f, "opaque blue");
  const uint8_t ga[4] = {0, 0, 50, 255};
  write_bytes(p, png_bytes(2, 1, PNG_FORMAT_GA, ga));
  img = image::read_image(p);
  expect_rgb(img, 0, 0, 1, 1, 1, 1e-6f, "transparent grey");
  expect_rgb(img, 0, 1, 50 / 255.f, 50 / 255.f, 50 / 255.f, 1e-6f, "opaque grey");
  // palette
  const uint8_t cmap[6] = {10, 200, 30, 250, 5, 60};
  const uint8_t index[3] = {1, 0, 1};
  write_bytes(p, png_bytes(3, 1, PNG_FORMAT_RGB_COLORMAP, index, cmap, 2));
  img = image::read_image(p);
  expect_rgb(img, 0, 0, 250 / 255.f, 5 / 255.f, 60 / 255.f, 1e-6f, "palette entry 1");
  expect_rgb(img, 0, 1, 10 / 255.f, 200 / 255.f, 30 / 255.f, 1e-6f, "palette entry 0");
  // 16-bit linear (the simplified API writes gAMA 1.0): converted to sRGB, linear 0.2140 = sRGB 0.5
  const uint16_t linear[6] = {0, 0, 0, uint16_t(0.2140 * 65535), uint16_t(0.2140 * 65535), 65535};
  write_bytes(p, png_bytes(2, 1, PNG_FORMAT_LINEAR_RGB, linear));
  img = image::read_image(p);
  expect_rgb(img, 0, 0, 0, 0, 0, 1e-6f, "16-bit black");
  expect_rgb(img, 0, 1, 0.5f, 0.5f, 1.0f, 1.5f / 255, "16-bit linear");
  // 16-bit without gamma information: its values are sRGB already (0x8080 -> 128)
  write_png16_grey(p, 0x8080);
  img = image::read_image(p);
  expect_rgb(img, 0, 0, 128 / 255.f, 128 / 255.f, 128 / 255.f, 0.5f / 255, "16-bit grey without gAMA");
}

TEST(ImageCodec, JpegRgbGreyAndCmyk) {
  TempDir dir("image_jpeg");
  const std::string p = dir.path + "/t.jpg";
  write_bytes(p, jpeg_bytes(16, 16, JCS_RGB, 3, {200, 40, 90}));
  Image img = image::read_image(p);
  ASSERT_EQ(img.width, 16);
  ASSERT_EQ(img.height, 16);
  expect_rgb(img, 8, 8, 200 / 255.f, 40 / 255.f, 90 / 255.f, 3 / 255.f, "RGB JPEG");
  write_bytes(p, jpeg_bytes(16, 8, JCS_GRAYSCALE, 1, {77}));
  img = image::read_image(p);
  ASSERT_EQ(img.height, 8);
  expect_rgb(img, 4, 3, 77 / 255.f, 77 / 255.f, 77 / 255.f, 2 / 255.f, "grey JPEG");
  // CMYK as Photoshop writes it (inverted, Adobe marker): orange = C 0, M 50%, Y 100%, K 10%
  write_bytes(p, jpeg_bytes(16, 16, JCS_CMYK, 4, {255, 128, 0, 230}));
  img = image::read_image(p);
  expect_rgb(img, 8, 8, 230 / 255.f, (128 / 255.f) * (230 / 255.f), 0, 4 / 255.f, "CMYK JPEG");
  // a JPEG under a .png name is still a JPEG
  write_bytes(dir.path + "/really_a_jpeg.png", jpeg_bytes(8, 8, JCS_RGB, 3, {0, 0, 255}));
  img = image::read_image(dir.path + "/really_a_jpeg.png");
  expect_rgb(img, 4, 4, 0, 0, 1, 3 / 255.f, "JPEG named .png");
}

void expect_refused(const std::string& path, const std::string& what) {
  try {
    image::read_image(path);
    ADD_FAILURE() << path << ": read, expected an error containing '" << what << "'";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind(path, 0), 0u) << "message does not start with the path: " << m;
    EXPECT_NE(m.find(what), std::string::npos) << m;
  }
}

TEST(ImageCodec, CorruptAndTruncatedFilesRefusedNamingTheFile) {
  TempDir dir("image_bad");
  Image img(32, 32, 0.25f);
  for (int y = 0; y < 32; ++y) img.at(y, y, 0) = 1.0f;
  const std::string png = image::encode_png(img);
  write_bytes(dir.path + "/cut.png", png.substr(0, png.size() / 2));
  expect_refused(dir.path + "/cut.png", "PNG");
  std::string flipped = png;
  flipped[png.size() / 2] = char(flipped[png.size() / 2] ^ 0x55);  // inside the image data: CRC mismatch
  write_bytes(dir.path + "/crc.png", flipped);
  expect_refused(dir.path + "/crc.png", "PNG");
  write_bytes(dir.path + "/header.png", png.substr(0, 20));
  expect_refused(dir.path + "/header.png", "PNG");
  const std::string jpg = jpeg_bytes(64, 64, JCS_RGB, 3, {10, 20, 30});
  write_bytes(dir.path + "/cut.jpg", jpg.substr(0, jpg.size() * 2 / 3));
  expect_refused(dir.path + "/cut.jpg", "JPEG: Premature end");
  write_bytes(dir.path + "/anim.gif", "GIF89a\x01\x00\x01\x00");
  expect_refused(dir.path + "/anim.gif", "not a PNG or JPEG file (starts with 47 49 46 38)");
  write_bytes(dir.path + "/empty.png", "");
  expect_refused(dir.path + "/empty.png", "empty file");
  expect_refused(dir.path + "/missing.png", "cannot open");
  expect_refused(dir.path, "is a folder");
}

// CRC-32 of PNG chunks (ISO 3309), bit by bit: enough for one header.
uint32_t crc32_png(const std::string& bytes) {
  uint32_t c = 0xffffffffu;
  for (unsigned char b : bytes) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_be16(std::string& s, size_t at, uint32_t v) {
  s[at] = char(v >> 8), s[at + 1] = char(v & 0xff);
}
void put_be32(std::string& s, size_t at, uint32_t v) {
  put_be16(s, at, v >> 16), put_be16(s, at + 2, v & 0xffff);
}

TEST(ImageCodec, HugeDeclaredSizeRefusedBeforeAllocating) {
  TempDir dir("image_huge");
  // PNG: IHDR (after the 8-byte signature, 4-byte length and "IHDR") says 20000 x 20000, CRC fixed up
  std::string png = image::encode_png(Image(1, 1, 0.5f));
  put_be32(png, 16, 20000);
  put_be32(png, 20, 20000);
  put_be32(png, 29, crc32_png(png.substr(12, 17)));
  write_bytes(dir.path + "/huge.png", png);
  expect_refused(dir.path + "/huge.png", "PNG: unsupported size 20000 x 20000");
  // JPEG: the frame header (FF C0, length, precision, height, width) says 20000 x 20000
  std::string jpg = jpeg_bytes(8, 8, JCS_RGB, 3, {1, 2, 3});
  const size_t sof = jpg.find("\xff\xc0");
  ASSERT_NE(sof, std::string::npos);
  put_be16(jpg, sof + 5, 20000);
  put_be16(jpg, sof + 7, 20000);
  write_bytes(dir.path + "/huge.jpg", jpg);
  expect_refused(dir.path + "/huge.jpg", "JPEG: unsupported size 20000 x 20000");
}

// The image fuzzer's find (2026-11-28): after IHDR, an iTXt chunk declaring 1.7 GB in a
// 220-byte file; libpng allocated the declared length first (1.7 GB, 2 s). Refused from
// the chunk table, naming the chunk, before libpng reads it.
TEST(ImageCodec, ChunkLongerThanTheFileRefusedBeforeAllocating) {
  TempDir dir("image_chunk");
  std::string png = image::encode_png(Image(3, 2, 0.5f));
  const size_t after_ihdr = 8 + 12 + 13;
  std::string itxt(4, '\0');
  put_be32(itxt, 0, 1691398320);
  itxt += "iTXt" + std::string(40, '\xb0');
  png.insert(after_ihdr, itxt);
  write_bytes(dir.path + "/long_chunk.png", png);
  expect_refused(dir.path + "/long_chunk.png", "PNG: chunk \"iTXt\" at byte 33 declares 1691398320 bytes");
}

// PyTorch's interpolate(mode="bilinear", align_corners=False, antialias=False)
// written out for one output pixel: the reference for enlarging.
float torch_bilinear(const Image& img, int out_w, int out_h, int y, int x, int c) {
  auto src = [](int i, int in, int out) {
    const double s = std::max(0.0, (i + 0.5) * double(in) / out - 0.5);
    const int i0 = std::min(int(s), in - 1), i1 = std::min(i0 + 1, in - 1);
    return std::make_tuple(i0, i1, s - i0);
  };
  auto [y0, y1, fy] = src(y, img.height, out_h);
  auto [x0, x1, fx] = src(x, img.width, out_w);
  const double top = img.at(y0, x0, c) * (1 - fx) + img.at(y0, x1, c) * fx;
  const double bottom = img.at(y1, x0, c) * (1 - fx) + img.at(y1, x1, c) * fx;
  return float(top * (1 - fy) + bottom * fy);
}

TEST(ImageResize, EnlargingMatchesPyTorchBilinear) {
  Image img(5, 4);
  for (int y = 0; y < 4; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = float((x * 7 + y * 13 + c * 5) % 17) / 17.0f;
  for (auto [w, h] : {std::pair{11, 9}, std::pair{5, 8}, std::pair{10, 4}}) {
    const Image out = image::resize_bilinear(img, w, h);
    ASSERT_EQ(out.width, w);
    ASSERT_EQ(out.height, h);
    for (int y = 0; y < h; ++y)
      for (int x = 0; x < w; ++x)
        for (int c = 0; c < 3; ++c)
          ASSERT_NEAR(out.at(y, x, c), torch_bilinear(img, w, h, y, x, c), 1e-5f) << w << "x" << h << " at " << x << "," << y;
  }
}

TEST(ImageResize, ShrinkingAveragesInsteadOfAliasing) {
  // one-pixel checks shrunk 3x: every output pixel centre falls on a source pixel
  // centre, so a plain bilinear sample keeps black and white; the widened filter
  // gives grey (0.5 +- 0.5/81)
  Image checks(48, 48);
  for (int y = 0; y < 48; ++y)
    for (int x = 0; x < 48; ++x)
      for (int c = 0; c < 3; ++c) checks.at(y, x, c) = float((x + y) % 2);
  const Image small = image::resize_bilinear(checks, 16, 16);
  for (int y = 1; y < 15; ++y)
    for (int x = 1; x < 15; ++x) ASSERT_NEAR(small.at(y, x, 0), 0.5f, 0.02f) << x << "," << y;
  // a constant stays constant at any size
  const Image grey = image::resize_bilinear(Image(7, 5, 0.3f), 3, 11);
  for (float v : grey.rgb) ASSERT_NEAR(v, 0.3f, 1e-6f);
  EXPECT_THROW(image::resize_bilinear(grey, 0, 4), std::invalid_argument);
}

TEST(ImageTensor, NormalisedChannelMajor) {
  Image img(3, 2);
  for (int y = 0; y < 2; ++y)
    for (int x = 0; x < 3; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = 0.1f * float(x + 3 * y) + 0.01f * float(c);
  const image::Normalization norm = image::imagenet_normalization();
  const Tensor t = image::to_tensor(img, norm);
  ASSERT_EQ(t.shape(), (Shape{3, 2, 3}));
  for (int c = 0; c < 3; ++c)
    for (int y = 0; y < 2; ++y)
      for (int x = 0; x < 3; ++x)
        EXPECT_NEAR(t.data()[(c * 2 + y) * 3 + x], (img.at(y, x, c) - norm.mean[size_t(c)]) / norm.std[size_t(c)], 1e-6f);
  image::Normalization bad;
  bad.std[1] = 0;
  EXPECT_THROW(image::to_tensor(img, bad), std::invalid_argument);
  // from a file, resized
  TempDir dir("image_input");
  image::write_png(dir.path + "/x.png", Image(8, 6, 0.5f));
  const Tensor in = image::load_input(dir.path + "/x.png", 4, 4);
  ASSERT_EQ(in.shape(), (Shape{3, 4, 4}));
  for (int64_t i = 0; i < in.numel(); ++i) ASSERT_NEAR(in.data()[i], 128 / 255.f, 1e-6f);
}

}  // namespace
}  // namespace attn
