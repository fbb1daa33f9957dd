#include "attn/viz/image_attention.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "attn/viz/output.h"
#include "attn/viz/text.h"

namespace attn::viz {
namespace {

constexpr double kMargin = 10, kGap = 8, kLabelPad = 6;
constexpr double kRowSumTolerance = 1e-3;

[[noreturn]] void fail(const std::string& what) { throw std::invalid_argument("image attention: " + what); }

Font word_font(const OverlayStyle& s) { return {"DejaVu Sans", s.font_size, false}; }
Font strip_title_font(const OverlayStyle& s) { return {"DejaVu Sans", s.font_size + 2, true}; }

void check_style(const OverlayStyle& s) {
  if (!(s.panel >= 32 && s.panel <= 2048)) fail("style.panel must be in [32, 2048], got " + std::to_string(s.panel));
  if (!(s.font_size >= 6 && s.font_size <= 72))
    fail("style.font_size must be in [6, 72], got " + std::to_string(s.font_size));
}

void check_weights(const ImageAttention& a, size_t cells) {
  const size_t steps = a.words.size();
  if (a.weights.size() != steps * cells)
    fail("weights hold " + std::to_string(a.weights.size()) + " values, expected [T = " + std::to_string(steps) +
         ", Gh * Gw = " + std::to_string(cells) + "]");
  for (size_t t = 0; t < steps; ++t) {
    double sum = 0;
    for (size_t g = 0; g < cells; ++g) {
      const float w = a.weights[t * cells + g];
      if (!std::isfinite(w) || w < 0)
        fail("weights[" + std::to_string(t) + ", " + std::to_string(g) + "] = " + std::to_string(w) +
             " is not a finite non-negative weight");
      sum += w;
    }
    if (std::abs(sum - 1) > kRowSumTolerance)
      fail("weights row " + std::to_string(t) + " (word '" + a.words[t] + "') sums to " + std::to_string(sum) +
           ", not 1");
  }
}

// The box of a w x h picture fitted (aspect kept) and centred in a panel x panel square at (x, y).
Box fit(double x, double y, double panel, int w, int h) {
  const double scale = std::min(panel / w, panel / h);
  return {x + (panel - w * scale) / 2, y + (panel - h * scale) / 2, w * scale, h * scale};
}

// Panels side by side, a label line under them, an optional title line above.
StripLayout layout_panels(const ImageAttention& a, const OverlayStyle& s, size_t count, bool with_title) {
  StripLayout L;
  const double label_h = measure_text("Ag", word_font(s)).height;
  const double title_h = with_title ? measure_text("Ag", strip_title_font(s)).height + kLabelPad : 0;
  L.title_y = kMargin;
  const double top = kMargin + title_h;
  for (size_t k = 0; k < count; ++k)
    L.panels.push_back(fit(kMargin + double(k) * (s.panel + kGap), top, s.panel, a.width, a.height));
  L.label_y = top + s.panel + kLabelPad;
  L.width = std::ceil(2 * kMargin + double(count) * s.panel + double(count - 1) * kGap);
  if (with_title) L.width = std::max(L.width, std::ceil(2 * kMargin + measure_text(a.title, strip_title_font(s)).width));
  L.height = std::ceil(L.label_y + label_h + kMargin);
  return L;
}

// rgb [h, w, 3] scaled into `box` (fit() keeps the aspect ratio: one scale for both axes).
void draw_picture(cairo_t* cr, const std::vector<float>& rgb, int w, int h, const Box& box) {
  draw_rgb(cr, rgb.data(), w, h, box.x, box.y, box.w / w);
}

void draw_word(cairo_t* cr, const std::string& word, const Box& panel, double y, const OverlayStyle& s) {
  cairo_set_source_rgb(cr, 0, 0, 0);
  draw_text(cr, word, word_font(s), panel.x + panel.w / 2, y, HAlign::Middle, VAlign::Top);
}

// Bilinear sample positions along one axis: for pixel p of n, the two cells
// (lo, hi) and the weight of hi, cell centres at (c + 0.5) * n / cells.
struct Tap {
  int lo = 0, hi = 0;
  float frac = 0;
};
std::vector<Tap> taps(int n, int cells) {
  std::vector<Tap> out(static_cast<size_t>(n));
  for (int p = 0; p < n; ++p) {
    const double src = std::clamp((p + 0.5) * cells / n - 0.5, 0.0, double(cells - 1));
    const int lo = int(std::floor(src));
    out[size_t(p)] = {lo, std::min(lo + 1, cells - 1), float(src - lo)};
  }
  return out;
}

}  // namespace

void check_image_attention(const ImageAttention& a, const OverlayStyle& style) {
  check_style(style);
  if (a.width < 1 || a.height < 1) fail("picture is empty (" + std::to_string(a.width) + "x" + std::to_string(a.height) + ")");
  if (a.rgb.size() != size_t(a.width) * size_t(a.height) * 3)
    fail("rgb holds " + std::to_string(a.rgb.size()) + " values, expected [H = " + std::to_string(a.height) +
         ", W = " + std::to_string(a.width) + ", 3]");
  if (a.grid_h < 1 || a.grid_w < 1 || a.grid_h > a.height || a.grid_w > a.width)
    fail("grid " + std::to_string(a.grid_h) + "x" + std::to_string(a.grid_w) + " must be at least 1x1 and at most " +
         "the picture's " + std::to_string(a.height) + "x" + std::to_string(a.width));
  if (a.words.empty()) fail("no words");
  for (size_t t = 0; t < a.words.size(); ++t) check_utf8(a.words[t], "image attention: words[" + std::to_string(t) + "]");
  check_utf8(a.title, "image attention: title");
  check_weights(a, size_t(a.grid_h) * size_t(a.grid_w));
}

std::vector<float> upsample_weights(const ImageAttention& a, int t, Upsample mode) {
  const size_t cells = size_t(a.grid_h) * size_t(a.grid_w);
  if (t < 0 || size_t(t) >= a.words.size() || a.weights.size() < (size_t(t) + 1) * cells)
    fail("word " + std::to_string(t) + " out of range");
  const float* row = a.weights.data() + size_t(t) * cells;
  auto at = [&](int r, int c) { return row[size_t(r) * size_t(a.grid_w) + size_t(c)]; };
  std::vector<float> map(size_t(a.width) * size_t(a.height));
  const std::vector<Tap> tx = taps(a.width, a.grid_w), ty = taps(a.height, a.grid_h);
  for (int y = 0; y < a.height; ++y)
    for (int x = 0; x < a.width; ++x) {
      float v;
      if (mode == Upsample::Nearest) {
        v = at(y * a.grid_h / a.height, x * a.grid_w / a.width);
      } else {
        const Tap &h = tx[size_t(x)], &vt = ty[size_t(y)];
        const float top = at(vt.lo, h.lo) * (1 - h.frac) + at(vt.lo, h.hi) * h.frac;
        const float bottom = at(vt.hi, h.lo) * (1 - h.frac) + at(vt.hi, h.hi) * h.frac;
        v = top * (1 - vt.frac) + bottom * vt.frac;
      }
      map[size_t(y) * size_t(a.width) + size_t(x)] = v;
    }
  const float peak = *std::max_element(map.begin(), map.end());
  if (peak > 0)
    for (float& v : map) v /= peak;
  return map;
}

std::vector<float> blend_attention(const ImageAttention& a, const std::vector<float>& map, const OverlayStyle& style) {
  if (map.size() != size_t(a.width) * size_t(a.height))
    fail("map holds " + std::to_string(map.size()) + " values, expected [H, W] = " + std::to_string(a.height) + "x" +
         std::to_string(a.width));
  std::vector<float> out(a.rgb.size());
  for (size_t p = 0; p < map.size(); ++p) {
    const float m = std::clamp(map[p], 0.0f, 1.0f);
    const Rgb c = color_of(style.colors, m);
    const float cmap[3] = {c.r / 255.0f, c.g / 255.0f, c.b / 255.0f};
    for (size_t k = 0; k < 3; ++k) {
      const float v = a.rgb[p * 3 + k];
      // Mask: 25% of the picture where nothing looks, the picture lifted a third of
      // the way to white where the word looks hardest.
      out[p * 3 + k] = style.blend == Blend::Mask ? (1 - m) * 0.25f * v + m * (v + (1 - v) / 3)
                                                  : 0.5f * v + 0.5f * cmap[k];
    }
  }
  return out;
}

StripLayout layout_strip(const ImageAttention& a, const OverlayStyle& style) {
  check_image_attention(a, style);
  return layout_panels(a, style, a.words.size() + 1, !a.title.empty());
}

void write_attention_strip(const std::string& path, const ImageAttention& a, const OverlayStyle& style) {
  const Format format = format_of(path, {Format::Png, Format::Pdf});
  const StripLayout L = layout_strip(a, style);
  const std::string bytes = render_cairo(format, L.width, L.height, [&](cairo_t* cr) {
    if (!a.title.empty()) {
      cairo_set_source_rgb(cr, 0, 0, 0);
      draw_text(cr, a.title, strip_title_font(style), kMargin, L.title_y, HAlign::Start, VAlign::Top);
    }
    draw_picture(cr, a.rgb, a.width, a.height, L.panels[0]);
    for (size_t t = 0; t < a.words.size(); ++t) {
      const std::vector<float> map = upsample_weights(a, int(t), style.upsample);
      draw_picture(cr, blend_attention(a, map, style), a.width, a.height, L.panels[t + 1]);
      draw_word(cr, a.words[t], L.panels[t + 1], L.label_y, style);
    }
  });
  write_replacing(path, bytes);
}

void write_word_overlay(const std::string& path, const ImageAttention& a, int t, const OverlayStyle& style) {
  const Format format = format_of(path, {Format::Png, Format::Pdf});
  check_image_attention(a, style);
  if (t < 0 || size_t(t) >= a.words.size())
    fail("word " + std::to_string(t) + " out of range [0, " + std::to_string(a.words.size()) + ")");
  const StripLayout L = layout_panels(a, style, 1, false);
  const std::vector<float> map = upsample_weights(a, t, style.upsample);
  const std::string bytes = render_cairo(format, L.width, L.height, [&](cairo_t* cr) {
    draw_picture(cr, blend_attention(a, map, style), a.width, a.height, L.panels[0]);
    draw_word(cr, a.words[size_t(t)], L.panels[0], L.label_y, style);
  });
  write_replacing(path, bytes);
}

std::vector<std::string> write_attention_files(const std::string& dir, const std::string& name, const ImageAttention& a,
                                               const OverlayStyle& style) {
  check_image_attention(a, style);
  std::filesystem::create_directories(dir);
  const std::string base = (std::filesystem::path(dir) / name).string();
  std::vector<std::string> paths = {base + ".strip.png"};
  write_attention_strip(paths[0], a, style);
  for (size_t t = 0; t < a.words.size(); ++t) {
    const std::string number = std::to_string(t + 1);
    paths.push_back(base + "." + (number.size() < 2 ? "0" : "") + number + ".png");
    write_word_overlay(paths.back(), a, int(t), style);
  }
  return paths;
}

}  // namespace attn::viz
