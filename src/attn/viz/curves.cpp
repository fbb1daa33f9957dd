// write_curves: the three panels of a run's training curves, on one x axis.
#include "attn/viz/curves.h"

#include <algorithm>

#include "attn/viz/output.h"
#include "attn/viz/plot.h"
#include "attn/viz/text.h"

namespace attn::viz {
namespace {

constexpr double kWidth = 820, kLeft = 70, kRight = 24, kTop = 34, kPanelH = 180, kGap = 62, kBottom = 52;

struct XScale {
  double divisor = 1;  // seconds per unit of the axis
  std::string label;
};

XScale x_scale(const TrainingCurves& c, CurveAxis x) {
  if (x == CurveAxis::Step) return {1, "step"};
  double max_s = 0;
  for (const auto* s : {&c.loss, &c.perplexity, &c.bleu})
    for (const auto& p : *s) max_s = std::max(max_s, p.time_s);
  if (max_s > 3 * 3600) return {3600, "training time (hours)"};
  if (max_s > 180) return {60, "training time (minutes)"};
  return {1, "training time (seconds)"};
}

Panel panel_of(const std::vector<CurvePoint>& s, CurveAxis x, const XScale& scale, std::string title,
               std::string note, Rgb color, bool markers) {
  Panel p{std::move(title), std::move(note), {}, color, markers};
  for (const auto& pt : s) p.points.emplace_back(x == CurveAxis::Step ? pt.step : pt.time_s / scale.divisor, pt.value);
  return p;
}

Axis shared_x_axis(const std::vector<Panel>& panels) {
  bool any = false;
  double lo = 0, hi = 0;
  for (const auto& p : panels)
    for (const auto& pt : p.points) {
      lo = any ? std::min(lo, pt.first) : pt.first;
      hi = any ? std::max(hi, pt.first) : pt.first;
      any = true;
    }
  lo = std::min(lo, 0.0);
  return any ? nice_axis(lo, hi + (hi - lo) * 0.02, 8) : nice_axis(0, 1, 8);  // the last marker clear of the frame
}

}  // namespace

void write_curves(const std::string& path, const TrainingCurves& c, CurveAxis x, const std::string& title) {
  const Format f = format_of(path, {Format::Png, Format::Svg, Format::Pdf});
  check_utf8(title, "curves: title");
  const XScale scale = x_scale(c, x);
  const std::vector<Panel> panels = {
      panel_of(c.loss, x, scale, "training loss (per target token)", "no training records in the log",
               {0x1f, 0x77, 0xb4}, false),
      panel_of(c.perplexity, x, scale, "validation perplexity", "no validation perplexity in the log",
               {0xd6, 0x5f, 0x0e}, true),
      panel_of(c.bleu, x, scale, "validation BLEU", "no validation BLEU in the log", {0x2c, 0xa0, 0x2c}, true)};
  const Axis xa = shared_x_axis(panels);
  const double top = kTop + (title.empty() ? 0 : 30);
  const double height = top + double(panels.size()) * (kPanelH + kGap) - kGap + kBottom;
  const std::string bytes = render_cairo(f, kWidth, height, [&](cairo_t* cr) {
    cairo_set_source_rgb(cr, 0, 0, 0);
    if (!title.empty())
      draw_text(cr, title, Font{"DejaVu Sans", 16, true}, kWidth / 2, 12, HAlign::Middle, VAlign::Top);
    for (size_t i = 0; i < panels.size(); ++i) {
      const Box area{kLeft, top + double(i) * (kPanelH + kGap), kWidth - kLeft - kRight, kPanelH};
      draw_panel(cr, area, xa, panels[i]);
    }
    cairo_set_source_rgb(cr, 0, 0, 0);
    draw_text(cr, scale.label, Font{"DejaVu Sans", 12, false}, kLeft + (kWidth - kLeft - kRight) / 2,
              height - 12, HAlign::Middle, VAlign::Bottom);
  });
  write_replacing(path, bytes);
}

}  // namespace attn::viz
