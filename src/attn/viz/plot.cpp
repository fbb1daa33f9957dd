#include "attn/viz/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "attn/viz/text.h"

namespace attn::viz {
namespace {

const Font kTickFont{"DejaVu Sans", 11, false};
const Font kTitleFont{"DejaVu Sans", 13, true};

Axis y_axis_of(const std::vector<std::pair<double, double>>& pts) {
  double lo = pts.front().second, hi = lo;
  for (const auto& p : pts) lo = std::min(lo, p.second), hi = std::max(hi, p.second);
  const double pad = (hi - lo) * 0.04;  // no marker sits on the frame, half clipped
  return nice_axis(lo - pad, hi + pad);
}

void draw_axes(cairo_t* cr, const Box& a, const Axis& x, const Axis& y) {
  auto px = [&](double v) { return a.x + (v - x.lo) / (x.hi - x.lo) * a.w; };
  auto py = [&](double v) { return a.y + a.h - (v - y.lo) / (y.hi - y.lo) * a.h; };
  cairo_set_line_width(cr, 1);
  for (double t : x.ticks) {  // light grid, then tick labels
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, std::round(px(t)) + 0.5, a.y);
    cairo_line_to(cr, std::round(px(t)) + 0.5, a.y + a.h);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    draw_text(cr, tick_text(t), kTickFont, px(t), a.y + a.h + 4, HAlign::Middle, VAlign::Top);
  }
  for (double t : y.ticks) {
    cairo_set_source_rgb(cr, 0.9, 0.9, 0.9);
    cairo_move_to(cr, a.x, std::round(py(t)) + 0.5);
    cairo_line_to(cr, a.x + a.w, std::round(py(t)) + 0.5);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
    draw_text(cr, tick_text(t), kTickFont, a.x - 6, py(t), HAlign::End, VAlign::Middle);
  }
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_rectangle(cr, a.x + 0.5, a.y + 0.5, a.w - 1, a.h - 1);
  cairo_stroke(cr);
}

void draw_series(cairo_t* cr, const Box& a, const Axis& x, const Axis& y, const Panel& p) {
  auto px = [&](double v) { return a.x + (v - x.lo) / (x.hi - x.lo) * a.w; };
  auto py = [&](double v) { return a.y + a.h - (v - y.lo) / (y.hi - y.lo) * a.h; };
  cairo_save(cr);
  cairo_rectangle(cr, a.x, a.y, a.w, a.h);
  cairo_clip(cr);
  cairo_set_source_rgb(cr, p.color.r / 255.0, p.color.g / 255.0, p.color.b / 255.0);
  cairo_set_line_width(cr, 1.8);
  cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
  for (size_t i = 0; i < p.points.size(); ++i) {
    const double X = px(p.points[i].first), Y = py(p.points[i].second);
    if (i == 0) cairo_move_to(cr, X, Y); else cairo_line_to(cr, X, Y);
  }
  cairo_stroke(cr);
  if (p.markers)
    for (const auto& pt : p.points) {
      cairo_arc(cr, px(pt.first), py(pt.second), 3.2, 0, 2 * M_PI);
      cairo_fill(cr);
    }
  cairo_restore(cr);
}

}  // namespace

Axis nice_axis(double lo, double hi, int target) {
  if (hi - lo <= std::abs(hi) * 1e-9) {  // one value (or all equal): a range around it
    const double pad = lo == 0 ? 1 : std::abs(lo) * 0.1;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / mag, step = (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * mag;
  Axis a;
  a.lo = std::floor(lo / step + 1e-9) * step;
  a.hi = std::ceil(hi / step - 1e-9) * step;
  for (double t = a.lo; t <= a.hi + step * 1e-6; t += step) a.ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return a;
}

std::string tick_text(double v) {
  char buf[32];
  if (v == std::round(v) && std::abs(v) < 1e12)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

void draw_panel(cairo_t* cr, const Box& area, const Axis& x, const Panel& p) {
  cairo_set_source_rgb(cr, 0, 0, 0);
  draw_text(cr, p.title, kTitleFont, area.x, area.y - 6, HAlign::Start, VAlign::Bottom);
  if (p.points.empty()) {
    draw_axes(cr, area, x, Axis{0, 1, {}});
    cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
    draw_text(cr, p.empty_note, kTickFont, area.x + area.w / 2, area.y + area.h / 2, HAlign::Middle, VAlign::Middle);
    return;
  }
  const Axis y = y_axis_of(p.points);
  draw_axes(cr, area, x, y);
  draw_series(cr, area, x, y, p);
}

}  // namespace attn::viz
