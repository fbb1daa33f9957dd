// The Transformer's row of the table of kinds (models/kinds.h): its config
// section read, written and checked, and the model built.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/models/kinds.h"
#include "attn/models/rnn/rnn_section.h"
#include "attn/models/transformer/transformer.h"
#include "attn/models/transformer/transformer_config.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, TransformerActivation>> kActivations = {
    {"relu", TransformerActivation::Relu}, {"gelu", TransformerActivation::Gelu}};
const std::vector<std::pair<std::string, TransformerNorm>> kNorms = {{"pre", TransformerNorm::Pre},
                                                                     {"post", TransformerNorm::Post}};
const std::vector<std::pair<std::string, TransformerPositions>> kPositions = {
    {"sinusoidal", TransformerPositions::Sinusoidal}, {"learned", TransformerPositions::Learned}};

void read_section(config::ObjectReader& r, const nlohmann::json&, ModelConfig& c) {
  auto s = std::make_unique<TransformerConfig>();
  s->encoder_layers = r.get_int("encoder_layers", s->encoder_layers);
  s->decoder_layers = r.get_int("decoder_layers", s->decoder_layers);
  s->heads = r.get_int("heads", s->heads);
  s->feed_forward = r.get_int("feed_forward", s->feed_forward);
  s->activation = r.get_enum("activation", s->activation, kActivations);
  s->norm = r.get_enum("norm", s->norm, kNorms);
  s->positions = r.get_enum("positions", s->positions, kPositions);
  s->max_positions = r.get_int("max_positions", s->max_positions);
  s->attention_dropout = r.get_double("attention_dropout", s->attention_dropout);
  c.kind = KindSection(std::move(s));
}

void write_section(const ModelConfig& c, nlohmann::ordered_json& j) {
  const auto& s = c.section<TransformerConfig>();
  j["encoder_layers"] = s.encoder_layers;
  j["decoder_layers"] = s.decoder_layers;
  j["heads"] = s.heads;
  j["feed_forward"] = s.feed_forward;
  j["activation"] = name(s.activation);
  j["norm"] = name(s.norm);
  j["positions"] = name(s.positions);
  j["max_positions"] = s.max_positions;
  j["attention_dropout"] = s.attention_dropout;
}

void require_range(int64_t v, int64_t lo, int64_t hi, const char* field) {
  require_field(v >= lo && v <= hi, field, std::string(field) + " = " + std::to_string(v) + " outside [" +
                                               std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

void validate_section(const ModelConfig& c) {
  const auto& s = c.section<TransformerConfig>();
  require_range(s.encoder_layers, 1, kMaxLayers, "encoder_layers");
  require_range(s.decoder_layers, 1, kMaxLayers, "decoder_layers");
  require_range(s.heads, 1, kMaxWidth, "heads");
  require_range(s.feed_forward, 1, kMaxWidth, "feed_forward");
  require_range(s.max_positions, 2, int64_t(1) << 16, "max_positions");
  require_field(c.embed % s.heads == 0, "heads", "heads = " + std::to_string(s.heads) + " must divide embed = " +
                                                     std::to_string(c.embed) + " (d_model)");
  require_field(s.attention_dropout >= 0 && s.attention_dropout < 1, "attention_dropout",
                "attention_dropout " + std::to_string(s.attention_dropout) + " outside [0, 1)");
}

// The embeddings and every layer's attention and feed-forward weights.
int64_t parameter_lower_bound(const ModelConfig& c) {
  const auto& s = c.section<TransformerConfig>();
  const int64_t E = c.embed, F = s.feed_forward;
  int64_t n = c.tgt_vocab * E;                                          // the target embedding (shared when tied)
  if (c.tied_embeddings != TiedEmbeddings::All) n += c.src_vocab * E;  // the source embedding
  n += s.encoder_layers * (4 * E * E + 2 * E * F);                      // self-attention, feed-forward
  n += s.decoder_layers * (8 * E * E + 2 * E * F);                      // + cross-attention
  return n;
}

}  // namespace

const char* name(TransformerActivation a) { return enum_name(kActivations, a); }
const char* name(TransformerNorm n) { return enum_name(kNorms, n); }
const char* name(TransformerPositions p) { return enum_name(kPositions, p); }

ModelKind transformer_kind() {
  return {.name = "transformer",
          .input = ModelInput::Tokens,
          .read = read_section,
          .write = write_section,
          .validate = validate_section,
          .min_parameter_count = parameter_lower_bound,
          .make = build_model<Transformer>,
          .section = new_section<TransformerConfig>,
          .describe = [](const ModelConfig&) { return AttentionDescription{"scaled-dot", "", 0, ""}; },
          .image_shape = {}};
}

}  // namespace attn::models
