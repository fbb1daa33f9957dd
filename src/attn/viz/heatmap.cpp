// write_heatmap: lays the heatmap out once and renders it in the file's format.
#include "attn/viz/heatmap.h"

#include <cstdio>

#include "attn/viz/heatmap_render.h"
#include "attn/viz/output.h"

namespace attn::viz {

std::string format_weight(float w) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", double(w));
  return buf;
}

void write_heatmap(const std::string& path, const Heatmap& h, const HeatmapStyle& style) {
  const Format f = format_of(path, {Format::Png, Format::Svg, Format::Pdf, Format::Html});
  const HeatmapLayout L = layout_heatmap(h, style);
  std::string bytes;
  if (f == Format::Svg)
    bytes = heatmap_svg(h, L, style);
  else if (f == Format::Html)
    bytes = heatmap_html(h, L, style);
  else
    bytes = render_cairo(f, L.width, L.height, [&](cairo_t* cr) { draw_heatmap(cr, h, L, style); });
  write_replacing(path, bytes);
}

}  // namespace attn::viz
