#include "attn/scenes/scene.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/scenes/render.h"

namespace attn::scenes {
namespace {

// Radii (at size 64) of the two size classes: far enough apart that a partly
// hidden large shape still looks larger than a whole small one.
constexpr double kRadius[2][2] = {{4.5, 6.0}, {9.5, 12.0}};
constexpr int kMaxAttempts = 5000;

std::vector<std::array<double, 2>> unit_outline(const std::string& shape) {
  std::vector<std::array<double, 2>> v;
  auto polar = [&](double r, double deg) {
    v.push_back({r * std::cos(deg * M_PI / 180), r * std::sin(deg * M_PI / 180)});
  };
  if (shape == "square") {
    v = {{-0.85, -0.85}, {0.85, -0.85}, {0.85, 0.85}, {-0.85, 0.85}};
  } else if (shape == "triangle") {
    for (double deg : {-90.0, 30.0, 150.0}) polar(1.2, deg);  // pointing up, centroid at the origin
  } else if (shape == "diamond") {
    v = {{0, -1.1}, {0.72, 0}, {0, 1.1}, {-0.72, 0}};
  } else if (shape == "star") {
    for (int k = 0; k < 10; ++k) polar(k % 2 ? 0.55 : 1.25, -90.0 + 36.0 * k);
  }
  return v;  // circle: none
}

// Places the object's outline and box for its centre, radius and angle.
void place(SceneObject& o) {
  const std::vector<std::array<double, 2>> unit = unit_outline(shape_names()[size_t(o.shape)]);
  o.outline.clear();
  double x0 = o.cx - o.radius, x1 = o.cx + o.radius, y0 = o.cy - o.radius, y1 = o.cy + o.radius;
  if (!unit.empty()) {
    x0 = y0 = 1e9;
    x1 = y1 = -1e9;
    const double c = std::cos(o.angle), s = std::sin(o.angle);
    for (const auto& p : unit) {
      const double x = o.cx + o.radius * (c * p[0] - s * p[1]), y = o.cy + o.radius * (s * p[0] + c * p[1]);
      o.outline.push_back({x, y});
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  o.box = {int(std::floor(x0)), int(std::floor(y0)), int(std::ceil(x1)), int(std::ceil(y1))};
}

SceneObject sample_object(Rng& rng, int size, int shape, int colour, int size_class) {
  const double u = size / 64.0;
  SceneObject o;
  o.shape = shape, o.colour = colour, o.size = size_class;
  o.radius = rng.uniform(float(kRadius[size_class][0]), float(kRadius[size_class][1])) * u;
  const double max_turn = shape_names()[size_t(shape)] == "star" ? 15.0 : shape_names()[size_t(shape)] == "diamond" ? 8.0 : 12.0;
  o.angle = rng.uniform(float(-max_turn), float(max_turn)) * M_PI / 180;
  const std::array<double, 3> base = colour_rgb(colour);
  for (int c = 0; c < 3; ++c) o.rgb[size_t(c)] = std::clamp(base[size_t(c)] + rng.uniform(-0.05f, 0.05f), 0.0, 1.0);
  // the centre anywhere that keeps the whole shape one pixel inside the image
  o.cx = o.cy = 0;
  place(o);
  const double lo_x = 1 - o.box[0], hi_x = size - 1 - o.box[2], lo_y = 1 - o.box[1], hi_y = size - 1 - o.box[3];
  o.cx = rng.uniform(float(lo_x), float(hi_x));
  o.cy = rng.uniform(float(lo_y), float(hi_y));
  place(o);
  return o;
}

// Boxes overlapping or less than a pixel apart.
bool boxes_touch(const std::array<int, 4>& a, const std::array<int, 4>& b) {
  return a[0] <= b[2] && b[0] <= a[2] && a[1] <= b[3] && b[1] <= a[3];
}

// The rules of scene.h's header: left-to-right gaps, clear relations.
bool clear_layout(const std::vector<SceneObject>& objs, int size) {
  const double u = size / 64.0;
  for (size_t i = 0; i + 1 < objs.size(); ++i) {
    const double dx = objs[i + 1].box_cx() - objs[i].box_cx(), dy = std::abs(objs[i + 1].box_cy() - objs[i].box_cy());
    if (dx < kMinGapX * u) return false;
    if (dy > kMaxFlatRatio * dx && dy < kMinSteepRatio * dx) return false;
  }
  for (const SceneObject& o : objs)
    if (o.box[0] < 0 || o.box[1] < 0 || o.box[2] > size || o.box[3] > size) return false;
  for (size_t i = 0; i < objs.size(); ++i)
    for (size_t j = i + 1; j < objs.size(); ++j)
      if (objs[i].colour == objs[j].colour && boxes_touch(objs[i].box, objs[j].box)) return false;
  return true;
}

// Each object's visible share given the drawing order; false when one is hidden too much.
bool visible_enough(std::vector<SceneObject>& objs, int size) {
  std::vector<std::vector<float>> cov;
  for (const SceneObject& o : objs) cov.push_back(coverage(o, size));
  for (size_t i = 0; i < objs.size(); ++i) {
    double total = 0, seen = 0;
    for (size_t p = 0; p < cov[i].size(); ++p) {
      double v = cov[i][p];
      total += v;
      for (size_t j = 0; j < objs.size(); ++j)
        if (objs[j].depth > objs[i].depth) v *= 1.0 - cov[j][p];
      seen += v;
    }
    objs[i].visible = total > 0 ? seen / total : 0;
    if (objs[i].visible < kMinVisible) return false;
  }
  return true;
}

}  // namespace

const std::vector<std::string>& shape_names() {
  static const std::vector<std::string> v{"circle", "square", "triangle", "diamond", "star"};
  return v;
}
const std::vector<std::string>& colour_names() {
  static const std::vector<std::string> v{"red", "orange", "yellow", "green", "blue", "purple"};
  return v;
}
const std::vector<std::string>& size_names() {
  static const std::vector<std::string> v{"small", "large"};
  return v;
}
const std::vector<std::string>& background_names() {
  static const std::vector<std::string> v{"noise", "stripes", "checks", "gradient", "blobs"};
  return v;
}

std::array<double, 3> colour_rgb(int colour) {
  static const std::array<double, 3> rgb[] = {
      {0.86, 0.12, 0.10}, {0.98, 0.52, 0.05}, {0.95, 0.86, 0.12},
      {0.12, 0.66, 0.20}, {0.14, 0.32, 0.90}, {0.58, 0.20, 0.78}};
  if (colour < 0 || colour >= int(std::size(rgb))) throw std::out_of_range("colour_rgb: no colour " + std::to_string(colour));
  return rgb[colour];
}

std::string relation(const SceneObject& a, const SceneObject& b) {
  const double dx = b.box_cx() - a.box_cx(), dy = b.box_cy() - a.box_cy();
  if (std::abs(dx) >= std::abs(dy)) return dx > 0 ? "left of" : "right of";
  return dy > 0 ? "above" : "below";
}

Scene sample_scene(Rng& rng, int size) {
  if (size < 32) throw std::invalid_argument("scene size must be at least 32 pixels, got " + std::to_string(size));
  Scene scene;
  scene.size = size;
  const float pick = rng.uniform();
  const int n = pick < 0.2f ? 1 : pick < 0.6f ? 2 : 3;
  for (int attempt = 0; attempt < kMaxAttempts; ++attempt) {
    std::vector<SceneObject> objs;
    std::vector<std::array<int, 3>> kinds;
    while (int(objs.size()) < n) {
      const std::array<int, 3> k{int(rng.below(shape_names().size())), int(rng.below(colour_names().size())),
                                 int(rng.below(size_names().size()))};
      if (std::find(kinds.begin(), kinds.end(), k) != kinds.end()) continue;  // every description names one object
      kinds.push_back(k);
      objs.push_back(sample_object(rng, size, k[0], k[1], k[2]));
    }
    std::vector<int> depth(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) depth[size_t(i)] = i;
    shuffle(depth, rng);
    for (int i = 0; i < n; ++i) objs[size_t(i)].depth = depth[size_t(i)];
    std::sort(objs.begin(), objs.end(), [](const SceneObject& a, const SceneObject& b) { return a.box_cx() < b.box_cx(); });
    if (!clear_layout(objs, size) || !visible_enough(objs, size)) continue;
    scene.objects = std::move(objs);
    break;
  }
  if (scene.objects.empty()) throw std::runtime_error("sample_scene: no clear layout found for " + std::to_string(n) + " objects");
  scene.background = int(rng.below(background_names().size()));
  const double grey = rng.uniform(0.3f, 0.7f);
  for (int c = 0; c < 3; ++c) scene.base[size_t(c)] = grey + rng.uniform(-0.05f, 0.05f);
  scene.texture_amplitude = rng.uniform(0.05f, 0.12f);
  scene.noise_sigma = rng.uniform(0.01f, 0.04f);
  scene.pixel_seed = rng.next_u64();
  return scene;
}

}  // namespace attn::scenes
