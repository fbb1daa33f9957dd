// Tiny translation models and a fixed padded batch, shared by the model tests
// (test_models.cpp, test_luong_decoder.cpp).
#pragma once
#include <string>
#include <vector>

#include "attn/data/batch.h"
#include "attn/data/special_ids.h"
#include "attn/models/config.h"
#include <ostream>

namespace attn::testing {

inline models::ModelConfig tiny(models::ModelType type) {
  models::ModelConfig c;
  c.type = type;
  c.src_vocab = 11;
  c.tgt_vocab = 13;
  c.embed = 6;
  c.encoder_hidden = 5;
  c.decoder_hidden = 7;
  c.attention = 4;
  c.readout = 6;
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
        models::ModelConfig c = tiny(models::ModelType::Luong);
        c.cell = cell, c.score = a.score, c.window = a.window, c.decoder_layers = layers;
        c.window_half_width = a.window == W::LocalM ? 1 : 2;
        if (a.score == S::Dot) c.encoder_hidden = 7, c.bidirectional = false;  // Dv == Hd
        v.push_back({std::string(cell == models::CellType::Lstm ? "lstm_" : "gru_") + a.name + "_" +
                         std::to_string(layers) + "layers",
                     c});
      }
  return v;
}

}  // namespace attn::testing
