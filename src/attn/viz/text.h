// Text of the figures through Pango: measured and drawn with font fallback, so
// labels in any script show (accents, œ, ▁, CJK where an installed font has it).
// Internal to viz/ and scenes/ (the contact sheets' captions).
#pragma once
#include <cairo.h>

#include <string>

namespace attn::viz {

struct Font {
  std::string family = "DejaVu Sans";  // Debian's fonts-dejavu-core; fontconfig falls back per glyph
  double size_px = 13;                  // absolute size: pixels in PNG, points in PDF/SVG
  bool bold = false;
};

struct TextSize {
  double width = 0, height = 0;  // logical extents of one line
};

// The size `text` takes in `font` (one line).
TextSize measure_text(const std::string& text, const Font& font);

enum class HAlign { Start, Middle, End };
enum class VAlign { Top, Middle, Bottom };

// Draws `text` with its box aligned to (x, y): HAlign along the text's own
// direction, VAlign across it; the text is rotated by angle_deg counter-clockwise
// about (x, y) (90: reads bottom to top). Colour: the current source.
void draw_text(cairo_t* cr, const std::string& text, const Font& font, double x, double y, HAlign h, VAlign v,
               double angle_deg = 0);

// Throws std::invalid_argument "<what>: not valid UTF-8" when `text` is not.
void check_utf8(const std::string& text, const std::string& what);

}  // namespace attn::viz
