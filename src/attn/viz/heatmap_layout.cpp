// Checks a heatmap and decides where its grid, labels, colour bar and title go.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/viz/heatmap.h"
#include "attn/viz/heatmap_render.h"
#include "attn/viz/text.h"

namespace attn::viz {
namespace {

constexpr double kMargin = 12;

void check_heatmap(const Heatmap& h, const HeatmapStyle& s) {
  if (h.rows <= 0 || h.cols <= 0)
    throw std::invalid_argument("heatmap: empty matrix (" + std::to_string(h.rows) + " x " + std::to_string(h.cols) + ")");
  if (int64_t(h.weights.size()) != h.rows * h.cols)
    throw std::invalid_argument("heatmap: " + std::to_string(h.weights.size()) + " weights for a " +
                                std::to_string(h.rows) + " x " + std::to_string(h.cols) + " matrix");
  if (int64_t(h.src_labels.size()) != h.cols)
    throw std::invalid_argument("heatmap: " + std::to_string(h.src_labels.size()) + " source labels for " +
                                std::to_string(h.cols) + " columns");
  if (int64_t(h.tgt_labels.size()) != h.rows)
    throw std::invalid_argument("heatmap: " + std::to_string(h.tgt_labels.size()) + " target labels for " +
                                std::to_string(h.rows) + " rows");
  for (size_t i = 0; i < h.weights.size(); ++i)
    if (!std::isfinite(h.weights[i]))
      throw std::invalid_argument("heatmap: weight at row " + std::to_string(i / size_t(h.cols)) + ", column " +
                                  std::to_string(i % size_t(h.cols)) + " is not finite");
  for (size_t c = 0; c < h.src_labels.size(); ++c) check_utf8(h.src_labels[c], "heatmap: source label " + std::to_string(c));
  for (size_t r = 0; r < h.tgt_labels.size(); ++r) check_utf8(h.tgt_labels[r], "heatmap: target label " + std::to_string(r));
  check_utf8(h.title, "heatmap: title");
  if (!(s.cell >= 4 && s.cell <= 200)) throw std::invalid_argument("heatmap style: cell must be in [4, 200]");
  if (!(s.font_size >= 4 && s.font_size <= 72)) throw std::invalid_argument("heatmap style: font_size must be in [4, 72]");
  if (!(s.label_angle >= 45 && s.label_angle <= 90))
    throw std::invalid_argument("heatmap style: label_angle must be in [45, 90] degrees");
}

double widest(const std::vector<std::string>& labels, const Font& f) {
  double w = 0;
  for (const auto& l : labels) w = std::max(w, measure_text(l, f).width);
  return w;
}

}  // namespace

Font label_font(const HeatmapStyle& s) { return {"DejaVu Sans", s.font_size, false}; }
Font tick_font(const HeatmapStyle& s) { return {"DejaVu Sans", s.font_size * 0.8, false}; }
Font title_font(const HeatmapStyle& s) { return {"DejaVu Sans", s.font_size * 1.15, true}; }
const std::vector<double>& colorbar_ticks() {
  static const std::vector<double> ticks = {0, 0.25, 0.5, 0.75, 1};
  return ticks;
}

HeatmapLayout layout_heatmap(const Heatmap& h, const HeatmapStyle& s) {
  check_heatmap(h, s);
  HeatmapLayout L;
  L.cell = std::round(s.cell);  // whole pixels: every cell's centre pixel is the cell's colour
  L.label_pad = std::round(s.font_size * 0.4);
  const Font lf = label_font(s);
  const double line = measure_text("Ag", lf).height;
  const double a = s.label_angle * M_PI / 180.0;
  // a source label starts at its column's centre above the grid and runs up and right at angle a
  double above = 0, right_of_centre = 0;
  for (const auto& label : h.src_labels) {
    const double w = measure_text(label, lf).width;
    above = std::max(above, w * std::sin(a) + line / 2 * std::cos(a));
    right_of_centre = std::max(right_of_centre, w * std::cos(a) + line / 2 * std::sin(a));
  }
  double title_h = 0, title_w = 0;
  if (!h.title.empty()) {
    const TextSize t = measure_text(h.title, title_font(s));
    title_h = t.height + L.label_pad * 2;
    title_w = t.width;
  }
  L.title_y = kMargin;
  L.grid.x = std::ceil(kMargin + widest(h.tgt_labels, lf) + L.label_pad);
  L.grid.y = std::ceil(kMargin + title_h + above + L.label_pad);
  L.grid.w = L.cell * double(h.cols);
  L.grid.h = L.cell * double(h.rows);
  double right = std::max(L.grid.x + L.grid.w, L.grid.x + L.grid.w - L.cell / 2 + right_of_centre);
  double bottom = L.grid.y + L.grid.h;
  if (s.colorbar) {
    const Font tf = tick_font(s);
    L.colorbar = {std::ceil(L.grid.x + L.grid.w + L.cell * 0.6 + 8), L.grid.y, std::round(s.font_size), 
                  std::max(L.grid.h, 6 * measure_text("0", tf).height)};
    double tick_w = 0;
    for (double t : colorbar_ticks()) tick_w = std::max(tick_w, measure_text(tick_label(t), tf).width);
    right = std::max(right, L.colorbar.x + L.colorbar.w + 4 + L.label_pad / 2 + tick_w);
    bottom = std::max(bottom, L.colorbar.y + L.colorbar.h + measure_text("0", tf).height / 2);
  }
  L.width = std::ceil(std::max(right + kMargin, title_w + 2 * kMargin));
  L.height = std::ceil(bottom + kMargin);
  return L;
}

std::string tick_label(double t) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%g", t);
  return buf;
}

}  // namespace attn::viz
