#include "attn/viz/colormap.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace attn::viz {
namespace {

// matplotlib's viridis at 0, 0.1, ..., 1
constexpr Rgb kViridis[11] = {{0x44, 0x01, 0x54}, {0x48, 0x24, 0x75}, {0x41, 0x44, 0x87}, {0x35, 0x5f, 0x8d},
                              {0x2a, 0x78, 0x8e}, {0x21, 0x91, 0x8c}, {0x22, 0xa8, 0x84}, {0x44, 0xbf, 0x70},
                              {0x7a, 0xd1, 0x51}, {0xbd, 0xdf, 0x26}, {0xfd, 0xe7, 0x25}};

uint8_t mix(uint8_t a, uint8_t b, double t) { return uint8_t(std::lround(a + (b - a) * t)); }

}  // namespace

Rgb color_of(ColorMap map, double w) {
  w = std::isnan(w) ? 0.0 : std::clamp(w, 0.0, 1.0);
  if (map == ColorMap::Grey) {
    const uint8_t v = uint8_t(std::lround(255.0 * w));
    return {v, v, v};
  }
  const double pos = w * 10.0;
  const int lo = std::min(9, int(pos));
  const double t = pos - lo;
  const Rgb a = kViridis[lo], b = kViridis[lo + 1];
  return {mix(a.r, b.r, t), mix(a.g, b.g, t), mix(a.b, b.b, t)};
}

ColorMap parse_color_map(const std::string& name, const std::string& what) {
  if (name == "grey" || name == "gray") return ColorMap::Grey;
  if (name == "viridis") return ColorMap::Viridis;
  throw std::invalid_argument(what + ": unknown colour map '" + name + "' (expected grey or viridis)");
}

std::string hex(Rgb c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
  return buf;
}

}  // namespace attn::viz
