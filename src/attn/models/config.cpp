#include "attn/models/config.h"

#include <algorithm>
#include <stdexcept>

#include "attn/config/object_reader.h"

namespace attn::models {
namespace {

const std::vector<std::pair<std::string, ModelType>> kTypes = {{"rnnsearch", ModelType::RnnSearch},
                                                               {"luong", ModelType::Luong},
                                                               {"show_attend_tell", ModelType::ShowAttendTell}};
const std::vector<std::pair<std::string, CellType>> kCells = {{"gru", CellType::Gru}, {"lstm", CellType::Lstm}};
const std::vector<std::pair<std::string, LuongScore>> kScores = {
    {"dot", LuongScore::Dot}, {"general", LuongScore::General}, {"concat", LuongScore::Concat}};
const std::vector<std::pair<std::string, LuongWindow>> kWindows = {
    {"global", LuongWindow::Global}, {"local-m", LuongWindow::LocalM}, {"local-p", LuongWindow::LocalP}};
const std::vector<std::pair<std::string, DecoderInit>> kInits = {
    {"mean", DecoderInit::Mean}, {"backward", DecoderInit::Backward}, {"zero", DecoderInit::Zero}};
const std::vector<std::pair<std::string, TiedEmbeddings>> kTied = {
    {"none", TiedEmbeddings::None}, {"decoder", TiedEmbeddings::Decoder}, {"all", TiedEmbeddings::All}};

const std::vector<std::pair<std::string, ImageAttention>> kImageAttention = {
    {"soft", ImageAttention::Soft}, {"hard", ImageAttention::Hard}, {"none", ImageAttention::None}};

template <class E>
const char* lookup(const std::vector<std::pair<std::string, E>>& names, E e) {
  for (const auto& [n, v] : names)
    if (v == e) return n.c_str();
  return "?";
}

// Throws "model config: <msg>" as a config::FieldError naming `field` (a
// training config's YAML reader finds the key's line by "model.<field>").
void require(bool ok, const std::string& field, const std::string& msg) {
  if (!ok) throw config::FieldError(field, "model config: " + msg, "model." + field);
}

}  // namespace

const char* name(ModelType t) { return lookup(kTypes, t); }
const char* name(CellType t) { return lookup(kCells, t); }
const char* name(LuongScore s) { return lookup(kScores, s); }
const char* name(LuongWindow w) { return lookup(kWindows, w); }
const char* name(ImageAttention a) { return lookup(kImageAttention, a); }

int64_t cnn_blocks(const ModelConfig& c) {
  int64_t blocks = 0;
  for (int64_t side = c.grid; side > 0 && side < c.image_size; side *= 2) ++blocks;
  return blocks;
}

int64_t min_parameter_count(const ModelConfig& c) {
  if (reads_images(c))  // target embedding, decoder recurrent weights
    return c.tgt_vocab * c.embed + 4 * c.decoder_hidden * c.decoder_hidden;
  const int64_t gates = c.cell == CellType::Lstm ? 4 : 3;
  const int64_t directions = c.bidirectional ? 2 : 1;
  int64_t n = c.src_vocab * c.embed;                                          // source embedding
  if (c.tied_embeddings != TiedEmbeddings::All) n += c.tgt_vocab * c.embed;  // target embedding
  n += directions * gates * c.encoder_hidden * c.embed;                       // encoder layer 0 input weights
  n += gates * c.decoder_hidden * c.decoder_hidden;                           // decoder recurrent weights
  return n;
}

namespace {

// The fields only show_attend_tell reads.
void validate_captioner(const ModelConfig& c) {
  require(c.src_vocab == 0, "src_vocab", "show_attend_tell reads images: src_vocab must be 0, got " +
                                             std::to_string(c.src_vocab));
  require(c.image_size >= 2 && c.image_size <= 4096, "image_size",
          "image_size = " + std::to_string(c.image_size) + " outside [2, 4096]");
  require(c.grid >= 1 && c.grid < c.image_size && c.grid << cnn_blocks(c) == c.image_size, "grid",
          "grid = " + std::to_string(c.grid) + ": image_size / grid must be a power of 2 >= 2 (image_size " +
              std::to_string(c.image_size) + ")");
  require(cnn_blocks(c) <= 8, "grid", "image_size / grid = 2^" + std::to_string(cnn_blocks(c)) + ": at most 8 CNN blocks");
  require(c.cnn_channels >= 8 && c.cnn_channels <= kMaxWidth && c.cnn_channels % 8 == 0, "cnn_channels",
          "cnn_channels = " + std::to_string(c.cnn_channels) + " must be a multiple of 8 (GroupNorm groups) in [8, " + std::to_string(kMaxWidth) + "]");
  require(c.cnn_channels << (cnn_blocks(c) - 1) <= kMaxWidth, "cnn_channels",
          "the last CNN block's channels " + std::to_string(c.cnn_channels) + " * 2^" +
              std::to_string(cnn_blocks(c) - 1) + " above the limit of " + std::to_string(kMaxWidth));
  require(c.cnn_context_blocks >= 0 && c.cnn_context_blocks <= 8, "cnn_context_blocks",
          "cnn_context_blocks = " + std::to_string(c.cnn_context_blocks) + " outside [0, 8]");
  require(c.decoder_layers == 1, "decoder_layers", "show_attend_tell has one decoder layer; decoder_layers = " +
                                                       std::to_string(c.decoder_layers));
  require(c.cell == CellType::Lstm, "cell", "show_attend_tell's decoder is an LSTM (Xu et al.); set cell: lstm");
  require(c.tied_embeddings != TiedEmbeddings::All, "tied_embeddings",
          "show_attend_tell has no source embedding: tied_embeddings none or decoder");
  require(c.attention_reg >= 0 && c.attention_reg <= 1e6, "attention_reg",
          "attention_reg " + std::to_string(c.attention_reg) + " outside [0, 1e6]");
  require(c.reinforce_weight >= 0 && c.reinforce_weight <= 1e6, "reinforce_weight",
          "reinforce_weight " + std::to_string(c.reinforce_weight) + " outside [0, 1e6]");
  require(c.entropy_bonus >= 0 && c.entropy_bonus <= 1e6, "entropy_bonus",
          "entropy_bonus " + std::to_string(c.entropy_bonus) + " outside [0, 1e6]");
  require(c.baseline_decay >= 0 && c.baseline_decay < 1, "baseline_decay",
          "baseline_decay " + std::to_string(c.baseline_decay) + " outside [0, 1)");
  require(c.hard_expected_prob >= 0 && c.hard_expected_prob <= 1, "hard_expected_prob",
          "hard_expected_prob " + std::to_string(c.hard_expected_prob) + " outside [0, 1]");
}

}  // namespace

void validate(const ModelConfig& c) {
  if (reads_images(c))
    validate_captioner(c);
  else
    require(c.src_vocab > 4, "src_vocab", "src_vocab " + std::to_string(c.src_vocab) + " must be > 4 (4 special ids)");
  require(c.tgt_vocab > 4, "tgt_vocab", "tgt_vocab " + std::to_string(c.tgt_vocab) + " must be > 4 (4 special ids)");
  for (auto [n, v] : {std::pair<const char*, int64_t>{"embed", c.embed}, {"encoder_hidden", c.encoder_hidden},
                      {"encoder_layers", c.encoder_layers}, {"decoder_hidden", c.decoder_hidden},
                      {"decoder_layers", c.decoder_layers}, {"attention", c.attention}, {"readout", c.readout}})
    require(v > 0, n, std::string(n) + " = " + std::to_string(v) + " must be > 0");
  // Upper bounds so that a lying config is refused before the model is allocated
  // (their products below stay far from int64 overflow).
  require(c.src_vocab <= kMaxVocab && c.tgt_vocab <= kMaxVocab, c.src_vocab > kMaxVocab ? "src_vocab" : "tgt_vocab",
          "vocabulary size above the limit of " + std::to_string(kMaxVocab));
  for (auto [n, v] : {std::pair<const char*, int64_t>{"embed", c.embed}, {"encoder_hidden", c.encoder_hidden},
                      {"decoder_hidden", c.decoder_hidden}, {"attention", c.attention}, {"readout", c.readout},
                      {"window_half_width", c.window_half_width}})
    require(v <= kMaxWidth, n, std::string(n) + " = " + std::to_string(v) + " above the limit of " + std::to_string(kMaxWidth));
  for (auto [n, v] : {std::pair<const char*, int64_t>{"encoder_layers", c.encoder_layers}, {"decoder_layers", c.decoder_layers}})
    require(v <= kMaxLayers, n, std::string(n) + " = " + std::to_string(v) + " above the limit of " + std::to_string(kMaxLayers));
  require(c.dropout >= 0 && c.dropout < 1, "dropout", "dropout " + std::to_string(c.dropout) + " outside [0, 1)");
  require(c.window_half_width >= 0, "window_half_width", "window_half_width must be >= 0");
  const int64_t smaller_vocab = reads_images(c) ? c.tgt_vocab : std::min(c.src_vocab, c.tgt_vocab);
  for (auto [n, id] : {std::pair<const char*, int>{"pad_id", c.specials.pad}, {"bos_id", c.specials.bos},
                       {"eos_id", c.specials.eos}, {"unk_id", c.specials.unk}})
    require(id >= 0 && id < smaller_vocab, n, std::string(n) + " = " + std::to_string(id) + " outside [0, " +
                                               std::to_string(smaller_vocab) + ")");
  if (c.tied_embeddings == TiedEmbeddings::All)
    require(c.src_vocab == c.tgt_vocab, "tied_embeddings", "tied_embeddings: all needs one joint vocabulary (src_vocab " +
                                            std::to_string(c.src_vocab) + " != tgt_vocab " +
                                            std::to_string(c.tgt_vocab) + ")");
  if (c.type == ModelType::RnnSearch) {
    require(c.cell == CellType::Gru, "cell", "rnnsearch uses GRU cells (Bahdanau et al.); set cell: gru or type: luong");
    require(c.decoder_layers == 1, "decoder_layers", "rnnsearch has one decoder layer; decoder_layers = " +
                                       std::to_string(c.decoder_layers));
    require(c.bidirectional, "bidirectional", "rnnsearch's encoder is bidirectional; set bidirectional: true or type: luong");
    if (c.tied_embeddings != TiedEmbeddings::None)
      require(c.readout == c.embed, "readout", "tied_embeddings needs readout == embed (" + std::to_string(c.readout) +
                                        " != " + std::to_string(c.embed) + ")");
  } else if (c.type == ModelType::Luong) {
    require(c.decoder_hidden == c.encoder_hidden * (c.bidirectional ? 2 : 1) || c.score != LuongScore::Dot, "score",
            "luong dot scores need decoder_hidden == encoder output size (" + std::to_string(c.decoder_hidden) +
                " vs " + std::to_string(c.encoder_hidden * (c.bidirectional ? 2 : 1)) + "); use score: general");
    require(c.window == LuongWindow::Global || c.score != LuongScore::Concat, "window",
            "local attention (window local-m / local-p) supports score dot or general, not concat");
    if (c.tied_embeddings != TiedEmbeddings::None)
      require(c.decoder_hidden == c.embed, "decoder_hidden", "tied_embeddings needs decoder_hidden == embed for luong (" +
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
  if (reads_images(c)) {  // written only for the kind that reads them: text models' files stay as they were
    j["image_size"] = c.image_size;
    j["grid"] = c.grid;
    j["cnn_channels"] = c.cnn_channels;
    j["cnn_context_blocks"] = c.cnn_context_blocks;
    j["image_attention"] = name(c.image_attention);
    j["attention_reg"] = c.attention_reg;
    j["reinforce_weight"] = c.reinforce_weight;
    j["entropy_bonus"] = c.entropy_bonus;
    j["baseline_decay"] = c.baseline_decay;
    j["hard_expected_prob"] = c.hard_expected_prob;
  }
  return j.dump();
}

ModelConfig model_config_from_json(const std::string& json_text, const std::string& path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": not valid JSON: " + config::parse_error_text(e));
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
  c.specials.pad = int(r.get_int("pad_id", c.specials.pad, 0, kMaxVocab));
  c.specials.bos = int(r.get_int("bos_id", c.specials.bos, 0, kMaxVocab));
  c.specials.eos = int(r.get_int("eos_id", c.specials.eos, 0, kMaxVocab));
  c.specials.unk = int(r.get_int("unk_id", c.specials.unk, 0, kMaxVocab));
  c.image_size = r.get_int("image_size", c.image_size);
  c.grid = r.get_int("grid", c.grid);
  c.cnn_channels = r.get_int("cnn_channels", c.cnn_channels);
  c.cnn_context_blocks = r.get_int("cnn_context_blocks", c.cnn_context_blocks);
  c.image_attention = r.get_enum("image_attention", c.image_attention, kImageAttention);
  c.attention_reg = r.get_double("attention_reg", c.attention_reg);
  c.reinforce_weight = r.get_double("reinforce_weight", c.reinforce_weight);
  c.entropy_bonus = r.get_double("entropy_bonus", c.entropy_bonus);
  c.baseline_decay = r.get_double("baseline_decay", c.baseline_decay);
  c.hard_expected_prob = r.get_double("hard_expected_prob", c.hard_expected_prob);
  if (c.type == ModelType::ShowAttendTell) {
    // its own defaults where the text models' differ: no source vocabulary, an LSTM decoder
    if (!j.contains("src_vocab")) c.src_vocab = 0;
    if (!j.contains("cell")) c.cell = CellType::Lstm;
  }
  r.finish();
  return c;
}

}  // namespace attn::models
