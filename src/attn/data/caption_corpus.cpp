#include "attn/data/caption_corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>

#include "attn/config/object_reader.h"

namespace attn::data {
namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::invalid_argument(where + ": " + what);
}

std::string index_path(const std::string& parent, const std::string& key, size_t i) {
  return parent + "." + key + "[" + std::to_string(i) + "]";
}

// The list under `key`, or nullptr when absent; anything but a list is an error.
const json* list_field(config::ObjectReader& r, const std::string& key, bool required) {
  const json* v = r.child(key);
  if (!v) {
    if (required) fail(r.key_path(key), "missing");
    return nullptr;
  }
  if (!v->is_array()) fail(r.key_path(key), "expected a list, got " + config::describe(*v));
  return v;
}

// A caption token: a non-empty word without spaces (tokens are a word vocabulary's units).
std::vector<std::string> read_tokens(config::ObjectReader& r) {
  const json* v = list_field(r, "tokens", true);
  if (v->empty()) fail(r.key_path("tokens"), "empty (a caption needs at least one token)");
  std::vector<std::string> tokens;
  for (size_t t = 0; t < v->size(); ++t) {
    const json& e = (*v)[t];
    const std::string where = r.key_path("tokens") + "[" + std::to_string(t) + "]";
    if (!e.is_string()) fail(where, "expected a string, got " + config::describe(e));
    std::string s = e.get<std::string>();
    if (s.empty()) fail(where, "empty token");
    if (s.find_first_of(" \t\n\r") != std::string::npos) fail(where, "token " + config::describe(e) + " contains white space");
    tokens.push_back(std::move(s));
  }
  return tokens;
}

std::vector<int> read_refs(config::ObjectReader& r, size_t n_tokens, size_t n_objects) {
  const json* v = list_field(r, "refs", false);
  std::vector<int> refs;
  if (!v) return refs;
  if (v->size() != n_tokens)
    fail(r.key_path("refs"), std::to_string(v->size()) + " refs for " + std::to_string(n_tokens) + " tokens");
  for (size_t t = 0; t < v->size(); ++t) {
    // whole_number, not get<int>: 18446744073709551615 was read as -1 (none)
    const std::optional<int> ref = config::whole_number<int>((*v)[t]);
    if (!ref || *ref < -1 || size_t(*ref + 1) > n_objects)
      fail(r.key_path("refs") + "[" + std::to_string(t) + "]",
           "expected -1 or an object index below " + std::to_string(n_objects) + ", got " + config::describe((*v)[t]));
    refs.push_back(*ref);
  }
  return refs;
}

// An object of a generated scene; its box must lie inside the width x height image.
CaptionObject read_object(const json& j, const std::string& where, int width, int height) {
  config::ObjectReader r(j, where);
  CaptionObject o;
  o.shape = r.get_string("shape", "");
  o.colour = r.get_string("colour", "");
  o.size = r.get_string("size", "");
  o.visible = r.get_double("visible", 1.0, 0.0, 1.0);
  const json* box = list_field(r, "box", true);
  if (box->size() != 4) fail(r.key_path("box"), "expected [x0, y0, x1, y1], got " + config::describe(*box));
  for (size_t k = 0; k < 4; ++k) {
    const auto x = config::whole_number<int>((*box)[k]);
    if (!x) fail(r.key_path("box") + "[" + std::to_string(k) + "]", "expected whole pixels, got " + config::describe((*box)[k]));
    o.box[k] = *x;
  }
  const auto& b = o.box;
  if (!(b[0] >= 0 && b[1] >= 0 && b[0] < b[2] && b[1] < b[3] && b[2] <= width && b[3] <= height))
    fail(r.key_path("box"), "[" + std::to_string(b[0]) + ", " + std::to_string(b[1]) + ", " + std::to_string(b[2]) + ", " +
                                std::to_string(b[3]) + "] is not a non-empty box inside the image of " +
                                std::to_string(width) + " x " + std::to_string(height) + " pixels");
  return o;
}

// The image's "width" or "height": absent (0), or whole pixels in [1, kMaxCaptionImageSide].
// (get_int then int(): 4294967296 wrapped to 0, "unknown", which switched off the box check.)
int image_side(config::ObjectReader& r, const std::string& key) {
  return r.has(key) ? int(r.get_int(key, 0, 1, kMaxCaptionImageSide)) : 0;
}

// Objects need the image's size: their boxes are checked against it, and
// `caption eval` places attention by them.
void read_objects(config::ObjectReader& r, const std::string& where, CaptionImage& img) {
  const json* objects = list_field(r, "objects", false);
  if (!objects || objects->empty()) return;
  if (img.width == 0 || img.height == 0)
    fail(r.key_path(img.width == 0 ? "width" : "height"), "missing (an image with objects needs its size in pixels)");
  for (size_t k = 0; k < objects->size(); ++k)
    img.objects.push_back(read_object((*objects)[k], index_path(where, "objects", k), img.width, img.height));
}

CaptionImage read_image(const json& j, size_t index, const std::string& file, const std::string& image_root,
                        const CaptionReadOptions& options) {
  const std::string where = file + ": images[" + std::to_string(index) + "]";
  config::ObjectReader r(j, where);
  CaptionImage img;
  img.index = int(index);
  img.filename = r.get_string("filename", "");
  if (img.filename.empty()) fail(r.key_path("filename"), "missing or empty");
  const std::string filepath = r.get_string("filepath", "");
  img.path = (std::filesystem::path(image_root) / filepath / img.filename).string();
  img.split = r.get_string("split", "");
  const auto& names = caption_split_names();
  if (std::find(names.begin(), names.end(), img.split) == names.end())
    fail(r.key_path("split"), "expected train, val, test or restval, got " + config::describe(json(img.split)));
  img.width = image_side(r, "width");
  img.height = image_side(r, "height");
  read_objects(r, where, img);
  const json* sentences = list_field(r, "sentences", true);
  if (sentences->empty()) fail(r.key_path("sentences"), "empty (an image needs at least one caption)");
  for (size_t s = 0; s < sentences->size(); ++s) {
    config::ObjectReader sr((*sentences)[s], index_path(where, "sentences", s));
    Caption c;
    c.tokens = read_tokens(sr);
    c.raw = sr.get_string("raw", "");
    c.refs = read_refs(sr, c.tokens.size(), img.objects.size());
    img.captions.push_back(std::move(c));
  }
  if (options.check_files) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(img.path, ec)) fail(r.key_path("filename"), img.path + ": no such image file");
  }
  return img;
}

}  // namespace

const std::vector<std::string>& caption_split_names() {
  static const std::vector<std::string> names{"train", "val", "test", "restval"};
  return names;
}

CaptionCorpus read_caption_corpus(const std::string& json_path, const std::string& image_root,
                                  const CaptionReadOptions& options) {
  std::ifstream in(json_path, std::ios::binary);
  if (!in) throw std::invalid_argument(json_path + ": cannot open");
  json j;
  try {
    j = json::parse(in);  // iterative: survives any nesting (CaptionCorpus.DeeplyNestedFileIsRefusedBriefly)
  } catch (const json::exception& e) {
    throw std::invalid_argument(json_path + ": not valid JSON: " + config::parse_error_text(e));
  }
  if (!j.is_object()) fail(json_path, "expected an object with a list of \"images\", got " + config::describe(j));
  CaptionCorpus corpus;
  if (j.contains("dataset")) {
    if (!j["dataset"].is_string()) fail(json_path + ": dataset", "expected a string, got " + config::describe(j["dataset"]));
    corpus.dataset = j["dataset"].get<std::string>();
  }
  const json* images = j.contains("images") ? &j["images"] : nullptr;
  if (!images || !images->is_array())
    fail(json_path + ": images", images ? "expected a list of images" : "missing (a Karpathy split file lists its images)");
  corpus.images.reserve(images->size());
  for (size_t i = 0; i < images->size(); ++i)
    corpus.images.push_back(read_image((*images)[i], i, json_path, image_root, options));
  return corpus;
}

std::vector<CaptionImage> select_splits(const CaptionCorpus& corpus, const std::vector<std::string>& splits) {
  const auto& names = caption_split_names();
  for (const std::string& s : splits)
    if (std::find(names.begin(), names.end(), s) == names.end())
      throw std::invalid_argument("unknown split '" + s + "' (expected train, val, test or restval)");
  std::vector<CaptionImage> out;
  for (const CaptionImage& img : corpus.images)
    if (std::find(splits.begin(), splits.end(), img.split) != splits.end()) out.push_back(img);
  return out;
}

}  // namespace attn::data
