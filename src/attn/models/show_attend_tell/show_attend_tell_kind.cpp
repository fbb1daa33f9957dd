// show_attend_tell's row of the table of kinds (models/kinds.h): its config
// section read, written and checked, the model built, the images it reads.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/models/kinds.h"
#include "attn/models/rnn/rnn_section.h"
#include "attn/models/show_attend_tell/show_attend_tell.h"
#include "attn/models/show_attend_tell/show_attend_tell_config.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, ImageAttention>> kImageAttention = {
    {"soft", ImageAttention::Soft}, {"hard", ImageAttention::Hard}, {"none", ImageAttention::None}};
const std::vector<std::pair<std::string, int>> kCells = {{"gru", 0}, {"lstm", 1}};

void read_section(config::ObjectReader& r, const nlohmann::json&, ModelConfig& c) {
  auto s = std::make_unique<ShowAttendTellConfig>();
  s->decoder_hidden = r.get_int("decoder_hidden", s->decoder_hidden);
  s->attention = r.get_int("attention", s->attention);
  // Written by every file before the kinds had sections; the decoder is one LSTM layer
  require_field(r.get_enum("cell", 1, kCells) == 1, "cell",
                "show_attend_tell's decoder is an LSTM (Xu et al.); set cell: lstm");
  const int64_t layers = r.get_int("decoder_layers", 1);
  require_field(layers == 1, "decoder_layers", "show_attend_tell has one decoder layer; decoder_layers = " +
                                                   std::to_string(layers));
  s->image_size = r.get_int("image_size", s->image_size);
  s->grid = r.get_int("grid", s->grid);
  s->cnn_channels = r.get_int("cnn_channels", s->cnn_channels);
  s->cnn_context_blocks = r.get_int("cnn_context_blocks", s->cnn_context_blocks);
  s->image_attention = r.get_enum("image_attention", s->image_attention, kImageAttention);
  s->attention_reg = r.get_double("attention_reg", s->attention_reg);
  s->reinforce_weight = r.get_double("reinforce_weight", s->reinforce_weight);
  s->entropy_bonus = r.get_double("entropy_bonus", s->entropy_bonus);
  s->baseline_decay = r.get_double("baseline_decay", s->baseline_decay);
  s->hard_expected_prob = r.get_double("hard_expected_prob", s->hard_expected_prob);
  // the text models' keys: every file written before the kinds had sections carries them
  read_legacy_keys(r, {"encoder_hidden", "encoder_layers", "bidirectional", "score", "window", "window_half_width",
                       "readout", "decoder_init"});
  c.kind = KindSection(std::move(s));
}

void write_section(const ModelConfig& c, nlohmann::ordered_json& j) {
  const auto& s = c.section<ShowAttendTellConfig>();
  j["decoder_hidden"] = s.decoder_hidden;
  j["attention"] = s.attention;
  j["image_size"] = s.image_size;
  j["grid"] = s.grid;
  j["cnn_channels"] = s.cnn_channels;
  j["cnn_context_blocks"] = s.cnn_context_blocks;
  j["image_attention"] = name(s.image_attention);
  j["attention_reg"] = s.attention_reg;
  j["reinforce_weight"] = s.reinforce_weight;
  j["entropy_bonus"] = s.entropy_bonus;
  j["baseline_decay"] = s.baseline_decay;
  j["hard_expected_prob"] = s.hard_expected_prob;
}

// a weight of the loss within its range, e.g. "[0, 1)"
void require_in(bool ok, const char* field, double x, const char* range) {
  require_field(ok, field, std::string(field) + " " + std::to_string(x) + " outside " + range);
}

void validate_section(const ModelConfig& c) {
  const auto& s = c.section<ShowAttendTellConfig>();
  for (auto [n, v] : {std::pair<const char*, int64_t>{"decoder_hidden", s.decoder_hidden}, {"attention", s.attention}}) {
    require_field(v > 0, n, std::string(n) + " = " + std::to_string(v) + " must be > 0");
    require_field(v <= kMaxWidth, n, std::string(n) + " = " + std::to_string(v) + " above the limit of " +
                                         std::to_string(kMaxWidth));
  }
  const int64_t blocks = cnn_blocks(s);
  require_field(s.image_size >= 2 && s.image_size <= 4096, "image_size",
                "image_size = " + std::to_string(s.image_size) + " outside [2, 4096]");
  require_field(s.grid >= 1 && s.grid < s.image_size && s.grid << blocks == s.image_size, "grid",
                "grid = " + std::to_string(s.grid) + ": image_size / grid must be a power of 2 >= 2 (image_size " +
                    std::to_string(s.image_size) + ")");
  require_field(blocks <= 8, "grid", "image_size / grid = 2^" + std::to_string(blocks) + ": at most 8 CNN blocks");
  require_field(s.cnn_channels >= 8 && s.cnn_channels <= kMaxWidth && s.cnn_channels % 8 == 0, "cnn_channels",
                "cnn_channels = " + std::to_string(s.cnn_channels) +
                    " must be a multiple of 8 (GroupNorm groups) in [8, " + std::to_string(kMaxWidth) + "]");
  require_field(s.cnn_channels << (blocks - 1) <= kMaxWidth, "cnn_channels",
                "the last CNN block's channels " + std::to_string(s.cnn_channels) + " * 2^" +
                    std::to_string(blocks - 1) + " above the limit of " + std::to_string(kMaxWidth));
  require_field(s.cnn_context_blocks >= 0 && s.cnn_context_blocks <= 8, "cnn_context_blocks",
                "cnn_context_blocks = " + std::to_string(s.cnn_context_blocks) + " outside [0, 8]");
  require_in(s.attention_reg >= 0 && s.attention_reg <= 1e6, "attention_reg", s.attention_reg, "[0, 1e6]");
  require_in(s.reinforce_weight >= 0 && s.reinforce_weight <= 1e6, "reinforce_weight", s.reinforce_weight, "[0, 1e6]");
  require_in(s.entropy_bonus >= 0 && s.entropy_bonus <= 1e6, "entropy_bonus", s.entropy_bonus, "[0, 1e6]");
  require_in(s.baseline_decay >= 0 && s.baseline_decay < 1, "baseline_decay", s.baseline_decay, "[0, 1)");
  require_in(s.hard_expected_prob >= 0 && s.hard_expected_prob <= 1, "hard_expected_prob", s.hard_expected_prob,
             "[0, 1]");
}

}  // namespace

int64_t cnn_blocks(const ShowAttendTellConfig& s) {
  int64_t blocks = 0;
  for (int64_t side = s.grid; side > 0 && side < s.image_size; side *= 2) ++blocks;
  return blocks;
}

const char* name(ImageAttention a) { return enum_name(kImageAttention, a); }

ModelKind show_attend_tell_kind() {
  return {.name = "show_attend_tell",
          .input = ModelInput::Images,
          .read = read_section,
          .write = write_section,
          .validate = validate_section,
          .min_parameter_count =
              [](const ModelConfig& c) {  // target embedding, decoder recurrent weights
                const int64_t Hd = c.section<ShowAttendTellConfig>().decoder_hidden;
                return c.tgt_vocab * c.embed + 4 * Hd * Hd;
              },
          .make = build_model<ShowAttendTell>,
          .section = new_section<ShowAttendTellConfig>,
          .describe =
              [](const ModelConfig& c) {
                const ImageAttention a = c.section<ShowAttendTellConfig>().image_attention;
                return AttentionDescription{a == ImageAttention::None ? "none" : "additive", "", 0, name(a)};
              },
          .image_shape =
              [](const ModelConfig& c) {
                const auto& s = c.section<ShowAttendTellConfig>();
                return ImageShape{s.image_size, s.grid, s.grid};
              }};
}

}  // namespace attn::models
