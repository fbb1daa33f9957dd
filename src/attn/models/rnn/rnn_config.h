// The fields of an RNN encoder-decoder that rnnsearch and luong share: the
// base of their config sections (RnnSearchConfig, LuongConfig).
//
//   encoder_hidden, encoder_layers  He per direction, stacked layers
//   bidirectional                   encoder reads both directions (rnnsearch: required)
//   decoder_hidden, decoder_layers  Hd, stacked layers (rnnsearch: 1)
//   cell: gru | lstm                the recurrent cell (rnnsearch: gru)
//   attention                       A, size of the additive / concat score MLP
//   decoder_init: mean | backward | zero   the initial decoder state
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/config.h"

namespace attn::models {

enum class CellType { Gru, Lstm };
enum class DecoderInit { Mean, Backward, Zero };

struct RnnConfig : KindConfig {
  int64_t encoder_hidden = 256;           // He: encoder GRU/LSTM size per direction
  int64_t encoder_layers = 1;             // stacked encoder layers
  bool bidirectional = true;              // bidirectional encoder (annotations are 2 He wide)
  int64_t decoder_hidden = 512;           // Hd: decoder state size
  int64_t decoder_layers = 1;             // stacked decoder layers (luong only; rnnsearch has 1)
  CellType cell = CellType::Gru;          // recurrent cell (luong); rnnsearch is GRU
  int64_t attention = 256;                // A: additive (rnnsearch) / concat, local-p (luong) score size
  DecoderInit decoder_init = DecoderInit::Mean;  // s0 = tanh(W mean_j h_j) / tanh(W h_1 backward) / 0
};

const char* name(CellType t);
const char* name(DecoderInit d);

}  // namespace attn::models
