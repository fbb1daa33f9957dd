#include "attn/viz/output.h"

#include <cairo-pdf.h>
#include <cairo-svg.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>

namespace attn::viz {
namespace {

cairo_status_t append_bytes(void* closure, const unsigned char* data, unsigned int length) {
  static_cast<std::string*>(closure)->append(reinterpret_cast<const char*>(data), length);
  return CAIRO_STATUS_SUCCESS;
}

void check(cairo_status_t s, const char* what) {
  if (s != CAIRO_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cairo_status_to_string(s));
}

}  // namespace

std::string extension(Format f) {
  switch (f) {
    case Format::Png: return ".png";
    case Format::Svg: return ".svg";
    case Format::Pdf: return ".pdf";
    case Format::Html: return ".html";
  }
  return "";
}

Format format_of(const std::string& path, const std::vector<Format>& allowed) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = char(std::tolower(static_cast<unsigned char>(c)));
  std::string names;
  for (Format f : allowed) {
    if (ext == extension(f)) return f;
    names += (names.empty() ? "" : ", ") + extension(f);
  }
  throw std::invalid_argument(path + ": unknown figure format '" + ext + "' (expected " + names + ")");
}

namespace {

// Every step-th pixel of the picture in both directions (step 1: all of it) as
// an RGB24 surface of ceil(width / step) x ceil(height / step).
cairo_surface_t* sampled_rgb_surface(const float* rgb, int width, int height, int step) {
  const int w = (width + step - 1) / step, h = (height + step - 1) / step;
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, w, h);
  check(cairo_surface_status(surface), "cairo surface");
  cairo_surface_flush(surface);
  unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  for (int y = 0; y < h; ++y) {
    auto* row = reinterpret_cast<uint32_t*>(data + y * stride);
    for (int x = 0; x < w; ++x) {
      uint32_t px = 0;
      for (int c = 0; c < 3; ++c) {
        const float v = rgb[(size_t(y) * size_t(step) * size_t(width) + size_t(x) * size_t(step)) * 3 + size_t(c)];
        px = (px << 8) | uint32_t(std::lround(std::clamp(double(v), 0.0, 1.0) * 255));
      }
      row[x] = px;  // cairo's RGB24: 0x00RRGGBB in native byte order
    }
  }
  cairo_surface_mark_dirty(surface);
  return surface;
}

}  // namespace

cairo_surface_t* rgb_surface(const float* rgb, int width, int height) {
  return sampled_rgb_surface(rgb, width, height, 1);
}

void draw_rgb(cairo_t* cr, const float* rgb, int width, int height, double x, double y, double scale) {
  // A side over cairo's limit has no surface (a 1 x 100000 picture stopped
  // `caption sheet` with "invalid value"): such a picture is drawn from every
  // step-th pixel, enlarged by step, at the same place and size.
  const int step = (std::max(width, height) + kCairoMaxSide - 1) / kCairoMaxSide;
  cairo_surface_t* surface = sampled_rgb_surface(rgb, width, height, step);
  scale *= step;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_scale(cr, scale, scale);
  cairo_set_source_surface(cr, surface, 0, 0);
  cairo_pattern_set_filter(cairo_get_source(cr), scale >= 2 && scale == std::floor(scale) ? CAIRO_FILTER_NEAREST
                                                                                          : CAIRO_FILTER_GOOD);
  cairo_paint(cr);
  cairo_restore(cr);
  cairo_surface_destroy(surface);
}

std::string render_cairo(Format f, double width, double height, const std::function<void(cairo_t*)>& draw) {
  std::string bytes;
  cairo_surface_t* surface = nullptr;
  if (f == Format::Png && !(width <= kCairoMaxSide && height <= kCairoMaxSide))
    throw std::invalid_argument("a figure of " + std::to_string(std::lround(std::ceil(width))) + " x " +
                                std::to_string(std::lround(std::ceil(height))) + " pixels is over cairo's limit of " +
                                std::to_string(kCairoMaxSide) + " pixels a side");
  if (f == Format::Png)
    surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, int(std::ceil(width)), int(std::ceil(height)));
  else if (f == Format::Pdf)
    surface = cairo_pdf_surface_create_for_stream(append_bytes, &bytes, width, height);
  else if (f == Format::Svg)
    surface = cairo_svg_surface_create_for_stream(append_bytes, &bytes, width, height);
  else
    throw std::logic_error("render_cairo: not a cairo format");
  check(cairo_surface_status(surface), "cairo surface");
  cairo_t* cr = cairo_create(surface);
  try {
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    draw(cr);
    check(cairo_status(cr), "cairo drawing");
  } catch (...) {
    cairo_destroy(cr);
    cairo_surface_destroy(surface);
    throw;
  }
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  if (f == Format::Png) check(cairo_surface_write_to_png_stream(surface, append_bytes, &bytes), "PNG encoding");
  cairo_surface_finish(surface);  // PDF and SVG write their last bytes here
  check(cairo_surface_status(surface), "cairo output");
  cairo_surface_destroy(surface);
  return bytes;
}

void write_replacing(const std::string& path, const std::string& bytes) {
  namespace fs = std::filesystem;
  const fs::path target(path);
  std::error_code ec;
  const bool in_place = fs::exists(target, ec) && !fs::is_regular_file(target, ec);  // /dev/stdout, a FIFO
  std::string tmp_name = ".";  // hidden, beside the target (same file system, so rename is atomic)
  tmp_name += target.filename().string();
  tmp_name += ".tmp" + std::to_string(::getpid());
  const fs::path tmp = in_place ? target : target.parent_path() / tmp_name;
  std::FILE* out = std::fopen(tmp.c_str(), "wb");
  if (!out) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
  errno = 0;
  const bool written = std::fwrite(bytes.data(), 1, bytes.size(), out) == bytes.size() && std::fflush(out) == 0;
  const int write_errno = errno;
  const bool closed = std::fclose(out) == 0;
  if (!written || !closed) {
    if (!in_place) fs::remove(tmp, ec);
    throw std::runtime_error(path + ": write failed: " + std::strerror(write_errno ? write_errno : errno));
  }
  if (in_place) return;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error(path + ": cannot move the written file into place: " + ec.message());
  }
}

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace attn::viz
