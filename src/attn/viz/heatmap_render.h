// The heatmap's renderers over one layout (heatmap_layout.cpp). Internal to viz/.
#pragma once
#include <cairo.h>

#include <string>
#include <vector>

#include "attn/viz/heatmap.h"
#include "attn/viz/text.h"

namespace attn::viz {

Font label_font(const HeatmapStyle& s);
Font tick_font(const HeatmapStyle& s);
Font title_font(const HeatmapStyle& s);
const std::vector<double>& colorbar_ticks();  // weights with a tick on the colour bar
std::string tick_label(double t);             // "0.25"

// PNG and PDF
void draw_heatmap(cairo_t* cr, const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s);
// the .svg file: one <rect class="cell"> per weight with data-r, data-c, data-w and a <title>
std::string heatmap_svg(const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s);
// the .html page around heatmap_svg
std::string heatmap_html(const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s);

}  // namespace attn::viz
