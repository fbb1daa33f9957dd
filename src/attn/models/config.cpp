#include "attn/models/config.h"

#include <algorithm>
#include <stdexcept>

#include "attn/config/object_reader.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, ModelType>> kTypes = {{"rnnsearch", ModelType::RnnSearch},
                                                               {"luong", ModelType::Luong}};
const std::vector<std::pair<std::string, CellType>> kCells = {{"gru", CellType::Gru}, {"lstm", CellType::Lstm}};
const std::vector<std::pair<std::string, LuongScore>> kScores = {
    {"dot", LuongScore::Dot}, {"general", LuongScore::General}, {"concat", LuongScore::Concat}};
const std::vector<std::pair<std::string, LuongWindow>> kWindows = {
    {"global", LuongWindow::Global}, {"local-m", LuongWindow::LocalM}, {"local-p", LuongWindow::LocalP}};
const std::vector<std::pair<std::string, DecoderInit>> kInits = {
    {"mean", DecoderInit::Mean}, {"backward", DecoderInit::Backward}, {"zero", DecoderInit::Zero}};
const std::vector<std::pair<std::string, TiedEmbeddings>> kTied = {
    {"none", TiedEmbeddings::None}, {"decoder", TiedEmbeddings::Decoder}, {"all", TiedEmbeddings::All}};

template <class E>
const char* lookup(const std::vector<std::pair<std::string, E>>& names, E e) {
  for (const auto& [n, v] : names)
    if (v == e) return n.c_str();
  return "?";
}

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument("model config: " + msg);
}

}  // namespace

const char* name(ModelType t) { return lookup(kTypes, t); }
const char* name(CellType t) { return lookup(kCells, t); }
const char* name(LuongScore s) { return lookup(kScores, s); }
const char* name(LuongWindow w) { return lookup(kWindows, w); }

int64_t min_parameter_count(const ModelConfig& c) {
  const int64_t gates = c.cell == CellType::Lstm ? 4 : 3;
  const int64_t directions = c.bidirectional ? 2 : 1;
  int64_t n = c.src_vocab * c.embed;                                          // source embedding
  if (c.tied_embeddings != TiedEmbeddings::All) n += c.tgt_vocab * c.embed;  // target embedding
  n += directions * gates * c.encoder_hidden * c.embed;                       // encoder layer 0 input weights
  n += gates * c.decoder_hidden * c.decoder_hidden;                           // decoder recurrent weights
  return n;
}

void validate(const ModelConfig& c) {
  require(c.src_vocab > 4, "src_vocab " + std::to_string(c.src_vocab) + " must be > 4 (4 special ids)");
  require(c.tgt_vocab > 4, "tgt_vocab " + std::to_string(c.tgt_vocab) + " must be > 4 (4 special ids)");
  for (auto [n, v] : {std::pair<const char*, int64_t>{"embed", c.embed}, {"encoder_hidden", c.encoder_hidden},
                      {"encoder_layers", c.encoder_layers}, {"decoder_hidden", c.decoder_hidden},
                      {"decoder_layers", c.decoder_layers}, {"attention", c.attention}, {"readout", c.readout}})
    require(v > 0, std::string(n) + " = " + std::to_string(v) + " must be > 0");
  // Upper bounds so that a lying config is refused before the model is allocated
  // (their products below stay far from int64 overflow).
  require(c.src_vocab <= kMaxVocab && c.tgt_vocab <= kMaxVocab,
          "vocabulary size above the limit of " + std::to_string(kMaxVocab));
  for (auto [n, v] : {std::pair<const char*, int64_t>{"embed", c.embed}, {"encoder_hidden", c.encoder_hidden},
                      {"decoder_hidden", c.decoder_hidden}, {"attention", c.attention}, {"readout", c.readout},
                      {"window_half_width", c.window_half_width}})
    require(v <= kMaxWidth, std::string(n) + " = " + std::to_string(v) + " above the limit of " + std::to_string(kMaxWidth));
  require(c.encoder_layers <= kMaxLayers && c.decoder_layers <= kMaxLayers,
          "layers above the limit of " + std::to_string(kMaxLayers));
  require(c.dropout >= 0 && c.dropout < 1, "dropout " + std::to_string(c.dropout) + " outside [0, 1)");
  require(c.window_half_width >= 0, "window_half_width must be >= 0");
  const int64_t smaller_vocab = std::min(c.src_vocab, c.tgt_vocab);
  for (auto [n, id] : {std::pair<const char*, int>{"pad_id", c.specials.pad}, {"bos_id", c.specials.bos},
                       {"eos_id", c.specials.eos}, {"unk_id", c.specials.unk}})
    require(id >= 0 && id < smaller_vocab, std::string(n) + " = " + std::to_string(id) + " outside [0, " +
                                               std::to_string(smaller_vocab) + ")");
  if (c.tied_embeddings == TiedEmbeddings::All)
    require(c.src_vocab == c.tgt_vocab, "tied_embeddings: all needs one joint vocabulary (src_vocab " +
                                            std::to_string(c.src_vocab) + " != tgt_vocab " +
                                            std::to_string(c.tgt_vocab) + ")");
  if (c.type == ModelType::RnnSearch) {
    require(c.cell == CellType::Gru, "rnnsearch uses GRU cells (Bahdanau et al.); set cell: gru or type: luong");
    require(c.decoder_layers == 1, "rnnsearch has one decoder layer; decoder_layers = " +
                                       std::to_string(c.decoder_layers));
    require(c.bidirectional, "rnnsearch's encoder is bidirectional; set bidirectional: true or type: luong");
    if (c.tied_embeddings != TiedEmbeddings::None)
      require(c.readout == c.embed, "tied_embeddings needs readout == embed (" + std::to_string(c.readout) +
                                        " != " + std::to_string(c.embed) + ")");
  } else {
    require(c.decoder_hidden == c.encoder_hidden * (c.bidirectional ? 2 : 1) || c.score != LuongScore::Dot,
            "luong dot scores need decoder_hidden == encoder output size (" + std::to_string(c.decoder_hidden) +
                " vs " + std::to_string(c.encoder_hidden * (c.bidirectional ? 2 : 1)) + "); use score: general");
    require(c.window == LuongWindow::Global || c.score != LuongScore::Concat,
            "local attention (window local-m / local-p) supports score dot or general, not concat");
    if (c.tied_embeddings != TiedEmbeddings::None)
      require(c.decoder_hidden == c.embed, "tied_embeddings needs decoder_hidden == embed for luong (" +
                                               std::to_string(c.decoder_hidden) + " != " + std::to_string(c.embed) +
                                               ")");
  }
}

std::string to_json(const ModelConfig& c) {
  nlohmann::ordered_json j;
  j["type"] = name(c.type);
  j["src_vocab"] = c.src_vocab;
  j["tgt_vocab"] = c.tgt_vocab;
  j["embed"] = c.embed;
  j["encoder_hidden"] = c.encoder_hidden;
  j["encoder_layers"] = c.encoder_layers;
  j["bidirectional"] = c.bidirectional;
  j["decoder_hidden"] = c.decoder_hidden;
  j["decoder_layers"] = c.decoder_layers;
  j["cell"] = name(c.cell);
  j["attention"] = c.attention;
  j["score"] = name(c.score);
  j["window"] = name(c.window);
  j["window_half_width"] = c.window_half_width;
  j["readout"] = c.readout;
  j["decoder_init"] = lookup(kInits, c.decoder_init);
  j["dropout"] = c.dropout;
  j["tied_embeddings"] = lookup(kTied, c.tied_embeddings);
  j["pad_id"] = c.specials.pad;
  j["bos_id"] = c.specials.bos;
  j["eos_id"] = c.specials.eos;
  j["unk_id"] = c.specials.unk;
  return j.dump();
}

ModelConfig model_config_from_json(const std::string& json_text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": not valid JSON: " + e.what());
  }
  config::ObjectReader r(j, path);
  ModelConfig c;
  c.type = r.get_enum("type", c.type, kTypes);
  c.src_vocab = r.get_int("src_vocab", c.src_vocab);
  c.tgt_vocab = r.get_int("tgt_vocab", c.tgt_vocab);
  c.embed = r.get_int("embed", c.embed);
  c.encoder_hidden = r.get_int("encoder_hidden", c.encoder_hidden);
  c.encoder_layers = r.get_int("encoder_layers", c.encoder_layers);
  c.bidirectional = r.get_bool("bidirectional", c.bidirectional);
  c.decoder_hidden = r.get_int("decoder_hidden", c.decoder_hidden);
  c.decoder_layers = r.get_int("decoder_layers", c.decoder_layers);
  c.cell = r.get_enum("cell", c.cell, kCells);
  c.attention = r.get_int("attention", c.attention);
  c.score = r.get_enum("score", c.score, kScores);
  c.window = r.get_enum("window", c.window, kWindows);
  c.window_half_width = r.get_int("window_half_width", c.window_half_width);
  c.readout = r.get_int("readout", c.readout);
  c.decoder_init = r.get_enum("decoder_init", c.decoder_init, kInits);
  c.dropout = r.get_double("dropout", c.dropout);
  c.tied_embeddings = r.get_enum("tied_embeddings", c.tied_embeddings, kTied);
  c.specials.pad = r.get_int32("pad_id", c.specials.pad);
  c.specials.bos = r.get_int32("bos_id", c.specials.bos);
  c.specials.eos = r.get_int32("eos_id", c.specials.eos);
  c.specials.unk = r.get_int32("unk_id", c.specials.unk);
  r.finish();
  return c;
}

}  // namespace attn::models
