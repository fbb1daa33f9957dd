#include "attn/scenes/dataset.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/image/codec.h"
#include "attn/scenes/grammar.h"
#include "attn/scenes/render.h"
#include "attn/tensor/safetensors.h"

namespace attn::scenes {
namespace {

using ojson = nlohmann::ordered_json;

// The scene of image `index`: its own stream, so it depends on (seed, index) only.
uint64_t scene_seed(uint64_t seed, int64_t index) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull + uint64_t(index) + 1;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

std::string file_name(int64_t index, int64_t count) {
  std::string digits = std::to_string(index);
  const size_t width = std::max<size_t>(6, std::to_string(count - 1).size());
  return std::string(width - digits.size(), '0') + digits + ".png";
}

ojson object_json(const SceneObject& o) {
  return {{"shape", shape_names()[size_t(o.shape)]},
          {"colour", colour_names()[size_t(o.colour)]},
          {"size", size_names()[size_t(o.size)]},
          {"box", {o.box[0], o.box[1], o.box[2], o.box[3]}},
          {"depth", o.depth},
          {"visible", std::round(o.visible * 1000) / 1000}};
}

ojson image_json(const Scene& scene, int64_t index, int64_t count, const std::string& split, int64_t& sentid) {
  ojson img = {{"filepath", "images"}, {"filename", file_name(index, count)}, {"imgid", index}, {"split", split},
               {"width", scene.size}, {"height", scene.size},
               {"background", background_names()[size_t(scene.background)]}};
  ojson objects = ojson::array();
  for (const SceneObject& o : scene.objects) objects.push_back(object_json(o));
  img["objects"] = objects;
  ojson sentences = ojson::array(), sentids = ojson::array();
  for (const SceneCaption& c : describe(scene)) {
    sentids.push_back(sentid);
    sentences.push_back({{"tokens", c.tokens}, {"raw", c.raw}, {"imgid", index}, {"sentid", sentid++},
                         {"phrasing", c.phrasing}, {"refs", c.refs}});
  }
  img["sentids"] = sentids;
  img["sentences"] = sentences;
  return img;
}

void check_options(const DatasetOptions& o, int64_t val, int64_t test) {
  if (o.out_dir.empty()) throw std::invalid_argument("--out: an output folder is needed");
  if (o.count < 1) throw std::invalid_argument("--count must be at least 1, got " + std::to_string(o.count));
  if (o.size < 32 || o.size > 1024) throw std::invalid_argument("--size must be 32 to 1024 pixels, got " + std::to_string(o.size));
  if (val < 0 || test < 0 || val + test > o.count)
    throw std::invalid_argument("--val " + std::to_string(val) + " and --test " + std::to_string(test) +
                                " must be non-negative and leave at most --count " + std::to_string(o.count) + " images");
}

}  // namespace

DatasetSummary write_dataset(const DatasetOptions& options) {
  const int64_t val = options.val >= 0 ? options.val : options.count / 10;
  const int64_t test = options.test >= 0 ? options.test : options.count / 10;
  check_options(options, val, test);
  namespace fs = std::filesystem;
  const fs::path dir(options.out_dir), images_dir = dir / "images";
  std::error_code ec;
  fs::create_directories(images_dir, ec);
  if (ec) throw std::runtime_error(images_dir.string() + ": cannot create the folder: " + ec.message());
  DatasetSummary summary;
  summary.train = options.count - val - test, summary.val = val, summary.test = test;
  ojson images = ojson::array();
  int64_t sentid = 0;
  for (int64_t i = 0; i < options.count; ++i) {
    Rng rng(scene_seed(options.seed, i));
    const Scene scene = sample_scene(rng, options.size);
    const std::string split = i < summary.train ? "train" : i < summary.train + val ? "val" : "test";
    image::write_png((images_dir / file_name(i, options.count)).string(), render_scene(scene), /*durable=*/false);
    images.push_back(image_json(scene, i, options.count, split, sentid));
    summary.objects[scene.objects.size() - 1]++;
    for (const SceneObject& o : scene.objects) summary.occluded += o.visible < 0.99;
  }
  const ojson root = {{"dataset", "shapes"},
                      {"generator", {{"command", "attn caption data"}, {"seed", options.seed}, {"count", options.count},
                                     {"size", options.size}, {"val", val}, {"test", test}}},
                      {"images", images}};
  summary.json_path = (dir / kDatasetJson).string();
  write_file_atomic(summary.json_path, root.dump(1) + "\n");
  return summary;
}

}  // namespace attn::scenes
