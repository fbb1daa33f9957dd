// The heatmap through cairo (PNG, PDF).
#include <cmath>

#include "attn/viz/heatmap_render.h"

namespace attn::viz {
namespace {

void set_color(cairo_t* cr, Rgb c) { cairo_set_source_rgb(cr, c.r / 255.0, c.g / 255.0, c.b / 255.0); }

void draw_cells(cairo_t* cr, const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  cairo_save(cr);
  cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);  // no seams between neighbouring cells
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t c = 0; c < h.cols; ++c) {
      const Box b = L.cell_box(r, c);
      set_color(cr, color_of(s.colors, h.weights[size_t(r * h.cols + c)]));
      cairo_rectangle(cr, b.x, b.y, b.w, b.h);
      cairo_fill(cr);
    }
  cairo_restore(cr);
  // a frame just outside the grid, so white cells at its edge stay visible
  cairo_set_source_rgb(cr, 0.55, 0.55, 0.55);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, L.grid.x - 0.5, L.grid.y - 0.5, L.grid.w + 1, L.grid.h + 1);
  cairo_stroke(cr);
}

void draw_labels(cairo_t* cr, const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  const Font f = label_font(s);
  cairo_set_source_rgb(cr, 0, 0, 0);
  for (int64_t c = 0; c < h.cols; ++c) {
    const Box b = L.cell_box(0, c);
    draw_text(cr, h.src_labels[size_t(c)], f, b.x + b.w / 2, L.grid.y - L.label_pad, HAlign::Start, VAlign::Middle,
              s.label_angle);
  }
  for (int64_t r = 0; r < h.rows; ++r) {
    const Box b = L.cell_box(r, 0);
    draw_text(cr, h.tgt_labels[size_t(r)], f, L.grid.x - L.label_pad, b.y + b.h / 2, HAlign::End, VAlign::Middle);
  }
  if (!h.title.empty())
    draw_text(cr, h.title, title_font(s), L.width / 2, L.title_y, HAlign::Middle, VAlign::Top);
}

void draw_colorbar(cairo_t* cr, const HeatmapLayout& L, const HeatmapStyle& s) {
  const Box& b = L.colorbar;
  // value 1 at the top; the map is linear between its 11 samples, so 11 stops draw it exactly
  cairo_pattern_t* grad = cairo_pattern_create_linear(0, b.y + b.h, 0, b.y);
  for (int i = 0; i <= 10; ++i) {
    const Rgb c = color_of(s.colors, i / 10.0);
    cairo_pattern_add_color_stop_rgb(grad, i / 10.0, c.r / 255.0, c.g / 255.0, c.b / 255.0);
  }
  cairo_rectangle(cr, b.x, b.y, b.w, b.h);
  cairo_set_source(cr, grad);
  cairo_fill(cr);
  cairo_pattern_destroy(grad);
  cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, b.x - 0.5, b.y - 0.5, b.w + 1, b.h + 1);
  cairo_stroke(cr);
  const Font f = tick_font(s);
  for (double t : colorbar_ticks()) {
    const double y = b.y + b.h * (1 - t);
    cairo_set_source_rgb(cr, 0.3, 0.3, 0.3);
    cairo_move_to(cr, b.x + b.w, y);
    cairo_line_to(cr, b.x + b.w + 4, y);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    draw_text(cr, tick_label(t), f, b.x + b.w + 4 + L.label_pad / 2, y, HAlign::Start, VAlign::Middle);
  }
}

}  // namespace

void draw_heatmap(cairo_t* cr, const Heatmap& h, const HeatmapLayout& L, const HeatmapStyle& s) {
  draw_cells(cr, h, L, s);
  draw_labels(cr, h, L, s);
  if (s.colorbar) draw_colorbar(cr, L, s);
}

}  // namespace attn::viz
