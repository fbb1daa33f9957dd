// rnnsearch's row of the table of kinds (models/kinds.h): its config section read,
// written and checked, and the model built.
#include <memory>
#include <string>

#include "attn/models/kinds.h"
#include "attn/models/rnn/rnn_section.h"
#include "attn/models/rnnsearch/rnnsearch.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"

namespace attn::models {
namespace {

void read_section(config::ObjectReader& r, const nlohmann::json&, ModelConfig& c) {
  auto s = std::make_unique<RnnSearchConfig>();
  read_rnn_section(r, *s);
  s->readout = r.get_int("readout", s->readout);
  // luong's and show_attend_tell's keys: every file written before the kinds had sections carries them
  read_legacy_keys(r, {"score", "window", "window_half_width", "image_size", "grid", "cnn_channels",
                       "cnn_context_blocks", "image_attention", "attention_reg", "reinforce_weight", "entropy_bonus",
                       "baseline_decay", "hard_expected_prob"});
  c.kind = KindSection(std::move(s));
}

void write_section(const ModelConfig& c, nlohmann::ordered_json& j) {
  const auto& s = c.section<RnnSearchConfig>();
  write_rnn_section(s, j);
  j["readout"] = s.readout;
}

void validate_section(const ModelConfig& c) {
  const auto& s = c.section<RnnSearchConfig>();
  validate_rnn_section(s);
  require_field(s.readout > 0, "readout", "readout = " + std::to_string(s.readout) + " must be > 0");
  require_field(s.readout <= kMaxWidth, "readout", "readout = " + std::to_string(s.readout) + " above the limit of " +
                                                       std::to_string(kMaxWidth));
  require_field(s.cell == CellType::Gru, "cell", "rnnsearch uses GRU cells (Bahdanau et al.); set cell: gru or type: luong");
  require_field(s.decoder_layers == 1, "decoder_layers", "rnnsearch has one decoder layer; decoder_layers = " +
                                                             std::to_string(s.decoder_layers));
  require_field(s.bidirectional, "bidirectional", "rnnsearch's encoder is bidirectional; set bidirectional: true or type: luong");
  if (c.tied_embeddings != TiedEmbeddings::None)
    require_field(s.readout == c.embed, "readout", "tied_embeddings needs readout == embed (" + std::to_string(s.readout) +
                                                       " != " + std::to_string(c.embed) + ")");
}

}  // namespace

ModelKind rnnsearch_kind() {
  return {.name = "rnnsearch",
          .input = ModelInput::Tokens,
          .read = read_section,
          .write = write_section,
          .validate = validate_section,
          .min_parameter_count = [](const ModelConfig& c) { return rnn_min_parameter_count(c, c.section<RnnSearchConfig>()); },
          .make = build_model<RnnSearch>,
          .section = new_section<RnnSearchConfig>,
          .describe = [](const ModelConfig&) { return AttentionDescription{"additive", "", 0, ""}; },
          .image_shape = {}};
}

}  // namespace attn::models
