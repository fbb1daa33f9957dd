// The table of model kinds (kinds.h): the one place that lists the built-in kinds.
#include "attn/models/kinds.h"

#include <algorithm>
#include <deque>
#include <mutex>
#include <stdexcept>

namespace attn::models {

// Each defined in its kind's folder (models/<kind>/<kind>_kind.cpp).
ModelKind rnnsearch_kind();
ModelKind luong_kind();
ModelKind show_attend_tell_kind();
ModelKind transformer_kind();

namespace {

struct Table {
  std::mutex mutex;
  std::deque<ModelKind> kinds;  // a deque: references stay valid as kinds are added
};

Table& table() {
  static Table* t = [] {
    auto* t = new Table;  // never destroyed: kinds stay valid through static destruction
    t->kinds.push_back(rnnsearch_kind());
    t->kinds.push_back(luong_kind());
    t->kinds.push_back(show_attend_tell_kind());
    t->kinds.push_back(transformer_kind());
    return t;
  }();
  return *t;
}

}  // namespace

const ModelKind& model_kind(const std::string& name) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::string known;
  for (const ModelKind& k : t.kinds) {
    if (k.name == name) return k;
    known += (known.empty() ? "" : ", ") + k.name;
  }
  throw std::invalid_argument("model type '" + name + "' is not a known kind (" + known + ")");
}

std::vector<std::string> model_kind_names() {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  std::vector<std::string> names;
  for (const ModelKind& k : t.kinds) names.push_back(k.name);
  return names;
}

void register_model_kind(ModelKind kind) {
  if (kind.name.empty() || !kind.read || !kind.write || !kind.validate || !kind.min_parameter_count || !kind.make ||
      !kind.section || (kind.input == ModelInput::Images && !kind.image_shape))
    throw std::invalid_argument("register_model_kind: kind '" + kind.name +
                                "' needs a name, read, write, validate, min_parameter_count, make, section "
                                "(and image_shape when it reads images)");
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mutex);
  for (const ModelKind& k : t.kinds)
    if (k.name == kind.name) throw std::invalid_argument("register_model_kind: '" + kind.name + "' is taken");
  t.kinds.push_back(std::move(kind));
}

ModelConfig model_config(const std::string& type) {
  ModelConfig c;
  c.type = type;
  c.kind = KindSection(model_kind(type).section());
  return c;
}

bool reads_images(const ModelConfig& c) { return model_kind(c.type).input == ModelInput::Images; }

ImageShape image_shape(const ModelConfig& c) {
  const ModelKind& k = model_kind(c.type);
  if (k.input != ModelInput::Images) throw std::invalid_argument("model type " + c.type + " reads tokens, not images");
  return k.image_shape(c);
}

AttentionDescription describe_attention(const ModelConfig& c) {
  const ModelKind& k = model_kind(c.type);
  return k.describe ? k.describe(c) : AttentionDescription{};
}

void read_legacy_keys(config::ObjectReader& r, std::initializer_list<const char*> keys) {
  using Names = std::vector<std::pair<std::string, int>>;
  static const std::vector<std::pair<std::string, Names>> kEnums = {
      {"cell", {{"gru", 0}, {"lstm", 1}}},
      {"score", {{"dot", 0}, {"general", 1}, {"concat", 2}}},
      {"window", {{"global", 0}, {"local-m", 1}, {"local-p", 2}}},
      {"decoder_init", {{"mean", 0}, {"backward", 1}, {"zero", 2}}},
      {"image_attention", {{"soft", 0}, {"hard", 1}, {"none", 2}}}};
  static const std::vector<std::string> kDoubles = {"attention_reg", "reinforce_weight", "entropy_bonus",
                                                    "baseline_decay", "hard_expected_prob"};
  for (const char* key : keys) {
    const std::string k = key;
    bool done = false;
    for (const auto& [name, names] : kEnums)
      if (name == k) (void)r.get_enum(k, 0, names), done = true;
    if (done) continue;
    if (k == "bidirectional") {
      (void)r.get_bool(k, true);
    } else if (std::find(kDoubles.begin(), kDoubles.end(), k) != kDoubles.end()) {
      (void)r.get_double(k, 0.0);
    } else if (!r.has(k)) {
      (void)r.get_int(k, 0);
    } else {  // the sizes: encoder_hidden, decoder_layers, readout, window_half_width, image_size, grid, ...
      const int64_t v = r.get_int(k, 0);
      // the text models' sizes keep the bounds validate() always gave them, whichever kind reads them
      const bool layers = k == "encoder_layers" || k == "decoder_layers";
      const bool width = k == "encoder_hidden" || k == "decoder_hidden" || k == "attention" || k == "readout";
      if (layers || width) require_field(v > 0, k, k + " = " + std::to_string(v) + " must be > 0");
      if (k == "window_half_width") require_field(v >= 0, k, "window_half_width must be >= 0");
      const int64_t limit = layers ? kMaxLayers : kMaxWidth;
      if (layers || width || k == "window_half_width")
        require_field(v <= limit, k, k + " = " + std::to_string(v) + " above the limit of " + std::to_string(limit));
    }
  }
}

}  // namespace attn::models
