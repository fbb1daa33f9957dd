#include "attn/models/rnn/rnn_config.h"

#include <string>
#include <utility>
#include <vector>

#include "attn/models/rnn/rnn_section.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, CellType>> kCells = {{"gru", CellType::Gru}, {"lstm", CellType::Lstm}};
const std::vector<std::pair<std::string, DecoderInit>> kInits = {
    {"mean", DecoderInit::Mean}, {"backward", DecoderInit::Backward}, {"zero", DecoderInit::Zero}};

}  // namespace

const char* name(CellType t) { return enum_name(kCells, t); }
const char* name(DecoderInit d) { return enum_name(kInits, d); }

void read_rnn_section(config::ObjectReader& r, RnnConfig& s) {
  s.encoder_hidden = r.get_int("encoder_hidden", s.encoder_hidden);
  s.encoder_layers = r.get_int("encoder_layers", s.encoder_layers);
  s.bidirectional = r.get_bool("bidirectional", s.bidirectional);
  s.decoder_hidden = r.get_int("decoder_hidden", s.decoder_hidden);
  s.decoder_layers = r.get_int("decoder_layers", s.decoder_layers);
  s.cell = r.get_enum("cell", s.cell, kCells);
  s.attention = r.get_int("attention", s.attention);
  s.decoder_init = r.get_enum("decoder_init", s.decoder_init, kInits);
}

void write_rnn_section(const RnnConfig& s, nlohmann::ordered_json& j) {
  j["encoder_hidden"] = s.encoder_hidden;
  j["encoder_layers"] = s.encoder_layers;
  j["bidirectional"] = s.bidirectional;
  j["decoder_hidden"] = s.decoder_hidden;
  j["decoder_layers"] = s.decoder_layers;
  j["cell"] = name(s.cell);
  j["attention"] = s.attention;
  j["decoder_init"] = name(s.decoder_init);
}

void validate_rnn_section(const RnnConfig& s) {
  for (auto [n, v] : {std::pair<const char*, int64_t>{"encoder_hidden", s.encoder_hidden},
                      {"encoder_layers", s.encoder_layers}, {"decoder_hidden", s.decoder_hidden},
                      {"decoder_layers", s.decoder_layers}, {"attention", s.attention}})
    require_field(v > 0, n, std::string(n) + " = " + std::to_string(v) + " must be > 0");
  for (auto [n, v] : {std::pair<const char*, int64_t>{"encoder_hidden", s.encoder_hidden},
                      {"decoder_hidden", s.decoder_hidden}, {"attention", s.attention}})
    require_field(v <= kMaxWidth, n, std::string(n) + " = " + std::to_string(v) + " above the limit of " +
                                         std::to_string(kMaxWidth));
  for (auto [n, v] : {std::pair<const char*, int64_t>{"encoder_layers", s.encoder_layers},
                      {"decoder_layers", s.decoder_layers}})
    require_field(v <= kMaxLayers, n, std::string(n) + " = " + std::to_string(v) + " above the limit of " +
                                          std::to_string(kMaxLayers));
}

int64_t rnn_min_parameter_count(const ModelConfig& c, const RnnConfig& s) {
  const int64_t gates = s.cell == CellType::Lstm ? 4 : 3;
  const int64_t directions = s.bidirectional ? 2 : 1;
  int64_t n = c.src_vocab * c.embed;                                          // source embedding
  if (c.tied_embeddings != TiedEmbeddings::All) n += c.tgt_vocab * c.embed;  // target embedding
  n += directions * gates * s.encoder_hidden * c.embed;                       // encoder layer 0 input weights
  n += gates * s.decoder_hidden * s.decoder_hidden;                           // decoder recurrent weights
  return n;
}

}  // namespace attn::models
