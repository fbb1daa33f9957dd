// Colour maps of the attention figures: a weight in [0, 1] to an RGB colour.
#pragma once
#include <cstdint>
#include <string>

namespace attn::viz {

// Grey: 0 black, 1 white (Bahdanau et al. 2015, Figure 3). Viridis: matplotlib's
// perceptually uniform map (dark violet -> yellow), readable in grey print and by
// colour-blind readers; sampled at 11 points and linearly interpolated.
enum class ColorMap { Grey, Viridis };

struct Rgb {
  uint8_t r = 0, g = 0, b = 0;
  bool operator==(const Rgb&) const = default;
};

// The colour of weight w (clamped to [0, 1]).
Rgb color_of(ColorMap map, double w);

// "grey" / "gray" / "viridis"; throws std::invalid_argument naming `what` otherwise.
ColorMap parse_color_map(const std::string& name, const std::string& what);

// "#rrggbb"
std::string hex(Rgb c);

}  // namespace attn::viz
