// The heatmap as SVG text, and the HTML page around it. Every label is escaped.
#include <cstdio>
#include <sstream>

#include "attn/viz/heatmap_render.h"
#include "attn/viz/output.h"

namespace attn::viz {
namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

void svg_cells(std::ostringstream& o, const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  o << "<g class=\"cells\" shape-rendering=\"crispEdges\">\n";
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t c = 0; c < h.cols; ++c) {
      const Box b = L.cell_box(r, c);
      const float w = h.weights[size_t(r * h.cols + c)];
      o << "<rect class=\"cell\" x=\"" << num(b.x) << "\" y=\"" << num(b.y) << "\" width=\"" << num(b.w)
        << "\" height=\"" << num(b.h) << "\" fill=\"" << hex(color_of(s.colors, w)) << "\" data-r=\"" << r
        << "\" data-c=\"" << c << "\" data-w=\"" << format_weight(w) << "\"><title>"
        << xml_escape(h.src_labels[size_t(c)]) << " \u2192 " << xml_escape(h.tgt_labels[size_t(r)]) << ": "
        << format_weight(w) << "</title></rect>\n";
    }
  o << "</g>\n<rect x=\"" << num(L.grid.x - 0.5) << "\" y=\"" << num(L.grid.y - 0.5) << "\" width=\""
    << num(L.grid.w + 1) << "\" height=\"" << num(L.grid.h + 1) << "\" fill=\"none\" stroke=\"#8c8c8c\"/>\n";
}

void svg_labels(std::ostringstream& o, const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  o << "<g font-size=\"" << num(s.font_size) << "\" dominant-baseline=\"central\">\n";
  for (int64_t c = 0; c < h.cols; ++c) {
    const Box b = L.cell_box(0, c);
    const double x = b.x + b.w / 2, y = L.grid.y - L.label_pad;
    o << "<text class=\"src\" x=\"" << num(x) << "\" y=\"" << num(y) << "\" transform=\"rotate(" << num(-s.label_angle)
      << " " << num(x) << " " << num(y) << ")\">" << xml_escape(h.src_labels[size_t(c)]) << "</text>\n";
  }
  for (int64_t r = 0; r < h.rows; ++r) {
    const Box b = L.cell_box(r, 0);
    o << "<text class=\"tgt\" x=\"" << num(L.grid.x - L.label_pad) << "\" y=\"" << num(b.y + b.h / 2)
      << "\" text-anchor=\"end\">" << xml_escape(h.tgt_labels[size_t(r)]) << "</text>\n";
  }
  o << "</g>\n";
  if (!h.title.empty())
    o << "<text class=\"title\" x=\"" << num(L.width / 2) << "\" y=\"" << num(L.title_y) << "\" font-size=\""
      << num(title_font(s).size_px) << "\" font-weight=\"bold\" text-anchor=\"middle\" dominant-baseline=\"hanging\">"
      << xml_escape(h.title) << "</text>\n";
}

void svg_colorbar(std::ostringstream& o, const HeatmapLayout& L, const HeatmapStyle& s) {
  const Box& b = L.colorbar;
  o << "<defs><linearGradient id=\"colorbar\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">";
  for (int i = 0; i <= 10; ++i)
    o << "<stop offset=\"" << num(i / 10.0) << "\" stop-color=\"" << hex(color_of(s.colors, i / 10.0)) << "\"/>";
  o << "</linearGradient></defs>\n<rect x=\"" << num(b.x) << "\" y=\"" << num(b.y) << "\" width=\"" << num(b.w)
    << "\" height=\"" << num(b.h) << "\" fill=\"url(#colorbar)\" stroke=\"#4d4d4d\"/>\n";
  o << "<g font-size=\"" << num(tick_font(s).size_px) << "\" dominant-baseline=\"central\">";
  for (double t : colorbar_ticks()) {
    const double y = b.y + b.h * (1 - t);
    o << "<line x1=\"" << num(b.x + b.w) << "\" y1=\"" << num(y) << "\" x2=\"" << num(b.x + b.w + 4) << "\" y2=\""
      << num(y) << "\" stroke=\"#4d4d4d\"/><text x=\"" << num(b.x + b.w + 4 + L.label_pad / 2) << "\" y=\"" << num(y)
      << "\">" << tick_label(t) << "</text>";
  }
  o << "</g>\n";
}

constexpr const char* kPageStyle = R"(
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 1.5em; color: #111; }
svg text { white-space: pre; }
rect.cell:hover { stroke: #e4572e; stroke-width: 2; }
#tip { position: absolute; pointer-events: none; background: #fffbe6; border: 1px solid #999;
       padding: 4px 8px; font-size: 13px; white-space: pre; box-shadow: 1px 1px 4px #0003; }
.hint { color: #555; font-size: 13px; }
)";

// The cell under the pointer: its source token, target token and weight, read
// from the SVG itself (labels as text nodes, so nothing is re-escaped).
constexpr const char* kPageScript = R"(
(function () {
  const svg = document.querySelector('svg');
  const src = Array.from(svg.querySelectorAll('text.src'), t => t.textContent);
  const tgt = Array.from(svg.querySelectorAll('text.tgt'), t => t.textContent);
  const tip = document.getElementById('tip');
  svg.querySelectorAll('rect.cell > title').forEach(t => t.remove());  // the box below replaces them
  svg.addEventListener('mousemove', e => {
    const cell = e.target.closest('rect.cell');
    if (!cell) { tip.hidden = true; return; }
    const r = +cell.dataset.r, c = +cell.dataset.c;
    tip.textContent = 'source: ' + src[c] + '\ntarget: ' + tgt[r] + '\nweight: ' + cell.dataset.w;
    tip.style.left = (e.pageX + 14) + 'px';
    tip.style.top = (e.pageY + 14) + 'px';
    tip.hidden = false;
  });
  svg.addEventListener('mouseleave', () => { tip.hidden = true; });
})();
)";

}  // namespace

std::string heatmap_svg(const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  std::ostringstream o;
  o << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << num(L.width) << "\" height=\"" << num(L.height)
    << "\" viewBox=\"0 0 " << num(L.width) << " " << num(L.height)
    << "\" font-family=\"DejaVu Sans, Verdana, sans-serif\" style=\"white-space:pre\">\n"
    << "<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n";
  svg_cells(o, h, L, s);
  svg_labels(o, h, L, s);
  if (s.colorbar) svg_colorbar(o, L, s);
  o << "</svg>\n";
  return o.str();
}

std::string heatmap_html(const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>"
    << xml_escape(h.title.empty() ? std::string("attention weights") : h.title) << "</title>\n<style>" << kPageStyle
    << "</style>\n</head>\n<body>\n"
    << heatmap_svg(h, L, s)
    << "<p class=\"hint\">Rows: target tokens; columns: source tokens; each cell: the attention weight "
       "of the source token when the target token was produced. Point at a cell for its value.</p>\n"
    << "<div id=\"tip\" hidden></div>\n<script>" << kPageScript << "</script>\n</body>\n</html>\n";
  return o.str();
}

}  // namespace attn::viz
