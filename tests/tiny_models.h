// Tiny translation models and a fixed padded batch, shared by the model tests
// (test_models.cpp, test_luong_decoder.cpp).
#pragma once
#include <string>
#include <vector>

#include "attn/data/batch.h"
#include "attn/data/special_ids.h"
#include "attn/models/config.h"
#include "attn/models/kinds.h"
#include "attn/models/luong/luong_config.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"
#include "attn/models/show_attend_tell/show_attend_tell_config.h"
#include <ostream>

namespace attn::testing {

// The kinds' config sections of a ModelConfig (std::logic_error for another kind's).
inline models::RnnConfig& rnn_of(models::ModelConfig& c) { return c.section<models::RnnConfig>(); }
inline models::RnnSearchConfig& rnnsearch_of(models::ModelConfig& c) { return c.section<models::RnnSearchConfig>(); }
inline models::LuongConfig& luong_of(models::ModelConfig& c) { return c.section<models::LuongConfig>(); }
inline models::ShowAttendTellConfig& captioner_of(models::ModelConfig& c) {
  return c.section<models::ShowAttendTellConfig>();
}
inline const models::RnnConfig& rnn_of(const models::ModelConfig& c) { return c.section<models::RnnConfig>(); }
inline const models::LuongConfig& luong_of(const models::ModelConfig& c) { return c.section<models::LuongConfig>(); }
inline const models::ShowAttendTellConfig& captioner_of(const models::ModelConfig& c) {
  return c.section<models::ShowAttendTellConfig>();
}

// type: rnnsearch or luong
inline models::ModelConfig tiny(const std::string& type) {
  models::ModelConfig c = models::model_config(type);
  c.src_vocab = 11;
  c.tgt_vocab = 13;
  c.embed = 6;
  rnn_of(c).encoder_hidden = 5;
  rnn_of(c).decoder_hidden = 7;
  rnn_of(c).attention = 4;
  if (type == "rnnsearch") rnnsearch_of(c).readout = 6;
  c.dropout = 0.0;
  return c;
}

// A fixed batch: 3 sentences, source lengths 4, 2, 3; target lengths 3, 1, 2.
inline data::Seq2SeqBatch tiny_batch(int64_t src_vocab, int64_t tgt_vocab) {
  data::Seq2SeqBatch b;
  const std::vector<std::vector<int>> src = {{4, 5, 6, 7}, {8, 9}, {10, 4, 5}};
  const std::vector<std::vector<int>> tgt = {{5, 6, 7}, {8}, {9, 12}};
  const int64_t B = 3, S = 4, T = 4;
  b.src = Tensor::zeros({B, S});
  b.tgt_in = Tensor::zeros({B, T});
  b.tgt_out = Tensor::zeros({B, T});
  for (int64_t i = 0; i < B; ++i) {
    b.src_lengths.push_back(int64_t(src[i].size()));
    for (size_t j = 0; j < src[i].size(); ++j) b.src.data()[i * S + int64_t(j)] = float(src[i][j] % src_vocab);
    b.tgt_in.data()[i * T] = data::SpecialIds{}.bos;
    for (size_t j = 0; j < tgt[i].size(); ++j) {
      b.tgt_in.data()[i * T + int64_t(j) + 1] = float(tgt[i][j] % tgt_vocab);
      b.tgt_out.data()[i * T + int64_t(j)] = float(tgt[i][j] % tgt_vocab);
    }
    b.tgt_out.data()[i * T + int64_t(tgt[i].size())] = data::SpecialIds{}.eos;
    b.targets.push_back(tgt[i]);
  }
  return b;
}

// A tiny luong of every cell and attention kind, named "gru_dot_1layers", ...: GRU and
// LSTM x the attentions (dot, general, concat; with_local: also dot / general with
// local-m (half width 1) and local-p (2)) x 1 and 2 layers; dot's encoder gives Dv == Hd.
struct LuongVariant {
  std::string name;
  models::ModelConfig config;
};
inline void PrintTo(const LuongVariant& v, std::ostream* os) { *os << v.name; }

inline std::vector<LuongVariant> luong_variants(bool with_local_m_dot) {
  struct Attention {
    const char* name;
    models::LuongScore score;
    models::LuongWindow window;
  };
  using S = models::LuongScore;
  using W = models::LuongWindow;
  std::vector<Attention> attentions = {{"dot", S::Dot, W::Global},
                                       {"general", S::General, W::Global},
                                       {"concat", S::Concat, W::Global},
                                       {"general_local_m", S::General, W::LocalM},
                                       {"dot_local_p", S::Dot, W::LocalP},
                                       {"general_local_p", S::General, W::LocalP}};
  if (with_local_m_dot) attentions.push_back({"dot_local_m", S::Dot, W::LocalM});
  std::vector<LuongVariant> v;
  for (models::CellType cell : {models::CellType::Gru, models::CellType::Lstm})
    for (const Attention& a : attentions)
      for (int64_t layers : {1, 2}) {
        models::ModelConfig c = tiny("luong");
        models::LuongConfig& l = luong_of(c);
        l.cell = cell, l.score = a.score, l.window = a.window, l.decoder_layers = layers;
        l.window_half_width = a.window == W::LocalM ? 1 : 2;
        if (a.score == S::Dot) l.encoder_hidden = 7, l.bidirectional = false;  // Dv == Hd
        v.push_back({std::string(cell == models::CellType::Lstm ? "lstm_" : "gru_") + a.name + "_" +
                         std::to_string(layers) + "layers",
                     c});
      }
  return v;
}

}  // namespace attn::testing
