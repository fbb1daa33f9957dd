#include "attn/scenes/render.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "attn/viz/output.h"

namespace attn::scenes {
namespace {

double clamp01(double v) { return std::clamp(v, 0.0, 1.0); }

// The background before the objects: base colour plus a grey-level texture of
// the scene's kind (same offset on every channel, so it never looks like an object colour).
image::Image background(const Scene& s, Rng& rng) {
  const int n = s.size;
  const double u = n / 64.0, a = s.texture_amplitude;
  std::vector<double> offset(size_t(n) * size_t(n), 0.0);
  auto at = [&](int y, int x) -> double& { return offset[size_t(y) * size_t(n) + size_t(x)]; };
  const std::string& kind = background_names()[size_t(s.background)];
  if (kind == "noise") {
    for (double& v : offset) v = rng.uniform(-float(a), float(a));
  } else if (kind == "stripes") {
    const double angle = rng.uniform(0, float(M_PI)), period = rng.uniform(6, 14) * u, phase = rng.uniform(0, 6.3f);
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) at(y, x) = a * std::sin(2 * M_PI * (x * std::cos(angle) + y * std::sin(angle)) / period + phase);
  } else if (kind == "checks") {
    const double cell = rng.uniform(4, 10) * u;
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) at(y, x) = ((int(x / cell) + int(y / cell)) % 2 ? a : -a);
  } else if (kind == "gradient") {
    const double angle = rng.uniform(0, float(2 * M_PI));
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x)
        at(y, x) = 2 * a * ((x - n / 2.0) * std::cos(angle) + (y - n / 2.0) * std::sin(angle)) / n;
  } else {  // blobs: a few soft light and dark patches
    for (int b = 0; b < 5; ++b) {
      const double bx = rng.uniform(0, float(n)), by = rng.uniform(0, float(n)), r = rng.uniform(8, 20) * u;
      const double sign = rng.uniform() < 0.5 ? -1.0 : 1.0;
      for (int y = 0; y < n; ++y)
        for (int x = 0; x < n; ++x)
          at(y, x) += sign * 1.5 * a * std::exp(-((x - bx) * (x - bx) + (y - by) * (y - by)) / (2 * r * r));
    }
  }
  image::Image img(n, n);
  for (int y = 0; y < n; ++y)
    for (int x = 0; x < n; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = float(clamp01(s.base[size_t(c)] + at(y, x)));
  return img;
}

void check(cairo_status_t st, const char* what) {
  if (st != CAIRO_STATUS_SUCCESS) throw std::runtime_error(std::string(what) + ": " + cairo_status_to_string(st));
}

}  // namespace

void object_path(cairo_t* cr, const SceneObject& o) {
  cairo_new_path(cr);
  if (o.outline.empty()) {
    cairo_arc(cr, o.cx, o.cy, o.radius, 0, 2 * M_PI);
  } else {
    cairo_move_to(cr, o.outline[0][0], o.outline[0][1]);
    for (size_t k = 1; k < o.outline.size(); ++k) cairo_line_to(cr, o.outline[k][0], o.outline[k][1]);
  }
  cairo_close_path(cr);
}

std::vector<float> coverage(const SceneObject& o, int size) {
  cairo_surface_t* surface = cairo_image_surface_create(CAIRO_FORMAT_A8, size, size);
  check(cairo_surface_status(surface), "cairo mask surface");
  cairo_t* cr = cairo_create(surface);
  object_path(cr, o);
  cairo_fill(cr);
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  std::vector<float> out(size_t(size) * size_t(size));
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) out[size_t(y) * size_t(size) + size_t(x)] = data[y * stride + x] / 255.0f;
  cairo_surface_destroy(surface);
  return out;
}

cairo_surface_t* to_surface(const image::Image& img) {
  return viz::rgb_surface(img.rgb.data(), img.width, img.height);
}

image::Image from_surface(cairo_surface_t* surface) {
  cairo_surface_flush(surface);
  const int w = cairo_image_surface_get_width(surface), h = cairo_image_surface_get_height(surface);
  const unsigned char* data = cairo_image_surface_get_data(surface);
  const int stride = cairo_image_surface_get_stride(surface);
  image::Image img(w, h);
  for (int y = 0; y < h; ++y) {
    const auto* row = reinterpret_cast<const uint32_t*>(data + y * stride);
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) img.at(y, x, c) = float((row[x] >> (16 - 8 * c)) & 0xff) / 255.0f;
  }
  return img;
}

image::Image render_scene(const Scene& scene) {
  Rng rng(scene.pixel_seed);
  cairo_surface_t* surface = to_surface(background(scene, rng));
  cairo_t* cr = cairo_create(surface);
  std::vector<const SceneObject*> order;
  for (const SceneObject& o : scene.objects) order.push_back(&o);
  std::sort(order.begin(), order.end(), [](const SceneObject* a, const SceneObject* b) { return a->depth < b->depth; });
  for (const SceneObject* o : order) {
    // light from the top left: the fill brightens there and darkens towards the bottom right
    cairo_pattern_t* shade = cairo_pattern_create_linear(o->box[0], o->box[1], o->box[2], o->box[3]);
    const auto& c = o->rgb;
    cairo_pattern_add_color_stop_rgb(shade, 0, clamp01(c[0] * 1.12), clamp01(c[1] * 1.12), clamp01(c[2] * 1.12));
    cairo_pattern_add_color_stop_rgb(shade, 1, c[0] * 0.85, c[1] * 0.85, c[2] * 0.85);
    cairo_set_source(cr, shade);
    object_path(cr, *o);
    cairo_fill(cr);
    cairo_pattern_destroy(shade);
  }
  check(cairo_status(cr), "cairo drawing");
  cairo_destroy(cr);
  image::Image img = from_surface(surface);
  cairo_surface_destroy(surface);
  for (float& v : img.rgb) v = float(clamp01(v + scene.noise_sigma * rng.normal()));
  return img;
}

}  // namespace attn::scenes
