#include "attn/viz/text.h"

#include <pango/pangocairo.h>

#include <cmath>
#include <memory>
#include <stdexcept>

namespace attn::viz {
namespace {

struct LayoutDeleter {
  void operator()(PangoLayout* l) const { g_object_unref(l); }
};
using LayoutPtr = std::unique_ptr<PangoLayout, LayoutDeleter>;

LayoutPtr make_layout(cairo_t* cr, const std::string& text, const Font& font) {
  LayoutPtr layout(pango_cairo_create_layout(cr));
  PangoFontDescription* desc = pango_font_description_new();
  pango_font_description_set_family(desc, font.family.c_str());
  pango_font_description_set_absolute_size(desc, font.size_px * PANGO_SCALE);
  pango_font_description_set_weight(desc, font.bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL);
  pango_layout_set_font_description(layout.get(), desc);
  pango_font_description_free(desc);
  pango_layout_set_text(layout.get(), text.c_str(), int(text.size()));
  return layout;
}

cairo_t* measuring_context() {
  static cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  static cairo_t* cr = cairo_create(surface);
  return cr;
}

// Unhinted metrics: a label measures the same on every surface, so the layout
// computed once fits the PNG, the PDF and the SVG alike.
void unhinted(cairo_t* cr) {
  cairo_font_options_t* opts = cairo_font_options_create();
  cairo_font_options_set_hint_metrics(opts, CAIRO_HINT_METRICS_OFF);
  cairo_font_options_set_hint_style(opts, CAIRO_HINT_STYLE_NONE);
  cairo_set_font_options(cr, opts);
  cairo_font_options_destroy(opts);
}

}  // namespace

TextSize measure_text(const std::string& text, const Font& font) {
  cairo_t* cr = measuring_context();
  unhinted(cr);
  LayoutPtr layout = make_layout(cr, text, font);
  PangoRectangle logical;
  pango_layout_get_extents(layout.get(), nullptr, &logical);
  return {double(logical.width) / PANGO_SCALE, double(logical.height) / PANGO_SCALE};
}

void draw_text(cairo_t* cr, const std::string& text, const Font& font, double x, double y, HAlign h, VAlign v,
               double angle_deg) {
  unhinted(cr);
  LayoutPtr layout = make_layout(cr, text, font);
  PangoRectangle logical;
  pango_layout_get_extents(layout.get(), nullptr, &logical);
  const double w = double(logical.width) / PANGO_SCALE, ht = double(logical.height) / PANGO_SCALE;
  const double dx = h == HAlign::Start ? 0 : h == HAlign::Middle ? -w / 2 : -w;
  const double dy = v == VAlign::Top ? 0 : v == VAlign::Middle ? -ht / 2 : -ht;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, -angle_deg * M_PI / 180.0);
  cairo_move_to(cr, dx, dy);
  pango_cairo_show_layout(cr, layout.get());
  cairo_restore(cr);
}

void check_utf8(const std::string& text, const std::string& what) {
  if (!g_utf8_validate(text.data(), gssize(text.size()), nullptr))
    throw std::invalid_argument(what + ": not valid UTF-8");
}

}  // namespace attn::viz
