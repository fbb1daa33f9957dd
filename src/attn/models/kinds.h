// The table of model kinds: name -> how its config section is read, written
// and checked, how the model is built, what it reads and how it describes its
// attention. The one place the code asks about a kind: make_model, the config
// JSON (config.cpp), validate, attn explain, the captioner, the server and
// attn bench all go through it, so nothing outside a kind's folder
// (models/<kind>/) names the kind. kinds.cpp lists the built-in kinds;
// register_model_kind adds one from outside the library (a test's own kind).
// Internal (includes nlohmann): not installed.
#pragma once
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attn/config/object_reader.h"
#include "attn/models/config.h"
#include "attn/models/seq2seq.h"

namespace attn::models {

enum class ModelInput {
  Tokens,  // encode() reads ids [B, S] and their lengths
  Images,  // encode() reads images [B, 3, H, W] (src_vocab 0)
};

// What an image kind reads: images [B, 3, size, size] -> a grid_h x grid_w grid of cells.
struct ImageShape {
  int64_t size = 0, grid_h = 0, grid_w = 0;
};

// How a kind's attention is described to a reader (attn explain's "score",
// "window", "image_attention" fields).
struct AttentionDescription {
  std::string score;            // "additive", "dot", "general", "concat", "none" (no scores)
  std::string window;           // "" for global attention, else its name ("local-m", "local-p")
  int64_t window_half_width = 0;  // D of a local window
  std::string image_attention;  // an image kind's attention ("soft", "hard", "none"), else ""
};

struct ModelKind {
  std::string name;                         // model.type
  ModelInput input = ModelInput::Tokens;    // what encode() reads
  // Reads the kind's keys from the flat model object (every key the kind
  // accepts, its declared legacy keys included) and sets c.kind to its section.
  std::function<void(config::ObjectReader& r, const nlohmann::json& j, ModelConfig& c)> read;
  // Writes the kind's own keys (c holds its section).
  std::function<void(const ModelConfig& c, nlohmann::ordered_json& j)> write;
  // Checks the kind's own fields and their combinations with the common ones
  // (config::FieldError naming the field, through require_field); validate()
  // checks the common fields first.
  std::function<void(const ModelConfig& c)> validate;
  // A lower bound on the parameters the config implies (min_parameter_count()).
  std::function<int64_t(const ModelConfig& c)> min_parameter_count;
  // The model (validates the config); parameters from init, dropout masks seeded with dropout_seed.
  std::function<std::unique_ptr<Seq2SeqModel>(const ModelConfig& c, Rng& init, uint64_t dropout_seed)> make;
  // A default-constructed section of the kind.
  std::function<std::unique_ptr<KindConfig>()> section;
  // How explain describes the kind's attention (may be empty: "" fields).
  std::function<AttentionDescription(const ModelConfig& c)> describe;
  // ModelInput::Images only: the images the kind reads.
  std::function<ImageShape(const ModelConfig& c)> image_shape;
};

// For a row's make and section: the model Model built from the config, a default Section.
template <class Model>
std::unique_ptr<Seq2SeqModel> build_model(const ModelConfig& c, Rng& init, uint64_t dropout_seed) {
  return std::make_unique<Model>(c, init, dropout_seed);
}
template <class Section>
std::unique_ptr<KindConfig> new_section() {
  return std::make_unique<Section>();
}

// The kind named `name`; throws std::invalid_argument listing the known names.
const ModelKind& model_kind(const std::string& name);
// Every kind's name, the built-in ones first, in the table's order.
std::vector<std::string> model_kind_names();
// Adds a kind (tests' own kinds); throws std::invalid_argument on a taken
// name or a kind without read, write, validate, min_parameter_count, make or section.
void register_model_kind(ModelKind kind);

// A config of kind `type` with its section default-constructed.
ModelConfig model_config(const std::string& type);
// Whether the config's kind reads images rather than source ids.
bool reads_images(const ModelConfig& c);
// The images an image kind reads; throws std::invalid_argument for a kind that reads tokens.
ImageShape image_shape(const ModelConfig& c);
// The kind's description of its attention.
AttentionDescription describe_attention(const ModelConfig& c);

// For the kinds' readers: the keys of the model object before the kinds had
// sections of their own (every model file carries every one of them), read
// with their old types and values checked as before, and ignored. A kind names
// the ones it does not use.
void read_legacy_keys(config::ObjectReader& r, std::initializer_list<const char*> keys);

}  // namespace attn::models
