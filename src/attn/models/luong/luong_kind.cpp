// luong's row of the table of kinds (models/kinds.h): its config section read,
// written and checked, and the model built.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "attn/models/kinds.h"
#include "attn/models/luong/luong.h"
#include "attn/models/luong/luong_config.h"
#include "attn/models/rnn/rnn_section.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, LuongScore>> kScores = {
    {"dot", LuongScore::Dot}, {"general", LuongScore::General}, {"concat", LuongScore::Concat}};
const std::vector<std::pair<std::string, LuongWindow>> kWindows = {
    {"global", LuongWindow::Global}, {"local-m", LuongWindow::LocalM}, {"local-p", LuongWindow::LocalP}};

void read_section(config::ObjectReader& r, const nlohmann::json&, ModelConfig& c) {
  auto s = std::make_unique<LuongConfig>();
  read_rnn_section(r, *s);
  s->score = r.get_enum("score", s->score, kScores);
  s->window = r.get_enum("window", s->window, kWindows);
  s->window_half_width = r.get_int("window_half_width", s->window_half_width);
  // rnnsearch's and show_attend_tell's keys: every file written before the kinds had sections carries them
  read_legacy_keys(r, {"readout", "image_size", "grid", "cnn_channels", "cnn_context_blocks", "image_attention",
                       "attention_reg", "reinforce_weight", "entropy_bonus", "baseline_decay", "hard_expected_prob"});
  c.kind = KindSection(std::move(s));
}

void write_section(const ModelConfig& c, nlohmann::ordered_json& j) {
  const auto& s = c.section<LuongConfig>();
  write_rnn_section(s, j);
  j["score"] = name(s.score);
  j["window"] = name(s.window);
  j["window_half_width"] = s.window_half_width;
}

void validate_section(const ModelConfig& c) {
  const auto& s = c.section<LuongConfig>();
  validate_rnn_section(s);
  require_field(s.window_half_width >= 0, "window_half_width", "window_half_width must be >= 0");
  require_field(s.window_half_width <= kMaxWidth, "window_half_width", "window_half_width = " +
                    std::to_string(s.window_half_width) + " above the limit of " + std::to_string(kMaxWidth));
  const int64_t Dv = s.encoder_hidden * (s.bidirectional ? 2 : 1);
  require_field(s.decoder_hidden == Dv || s.score != LuongScore::Dot, "score",
                "luong dot scores need decoder_hidden == encoder output size (" + std::to_string(s.decoder_hidden) +
                    " vs " + std::to_string(Dv) + "); use score: general");
  require_field(s.window == LuongWindow::Global || s.score != LuongScore::Concat, "window",
                "local attention (window local-m / local-p) supports score dot or general, not concat");
  if (c.tied_embeddings != TiedEmbeddings::None)
    require_field(s.decoder_hidden == c.embed, "decoder_hidden", "tied_embeddings needs decoder_hidden == embed for luong (" +
                                                                     std::to_string(s.decoder_hidden) + " != " +
                                                                     std::to_string(c.embed) + ")");
}

AttentionDescription describe_section(const ModelConfig& c) {
  const auto& s = c.section<LuongConfig>();
  AttentionDescription d;
  d.score = name(s.score);
  if (s.window != LuongWindow::Global) d.window = name(s.window), d.window_half_width = s.window_half_width;
  return d;
}

}  // namespace

const char* name(LuongScore s) { return enum_name(kScores, s); }
const char* name(LuongWindow w) { return enum_name(kWindows, w); }

ModelKind luong_kind() {
  return {.name = "luong",
          .input = ModelInput::Tokens,
          .read = read_section,
          .write = write_section,
          .validate = validate_section,
          .min_parameter_count = [](const ModelConfig& c) { return rnn_min_parameter_count(c, c.section<LuongConfig>()); },
          .make = build_model<Luong>,
          .section = new_section<LuongConfig>,
          .describe = describe_section,
          .image_shape = {}};
}

}  // namespace attn::models
