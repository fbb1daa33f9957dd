// rnnsearch's config section (model.type: rnnsearch): the shared RNN fields
// (models/rnn/rnn_config.h; rnnsearch's encoder is a bidirectional GRU, its
// decoder one GRU layer) and
//   readout                         R, the deep-output size before the vocabulary projection
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/rnn/rnn_config.h"

namespace attn::models {

struct RnnSearchConfig : RnnConfig {
  int64_t readout = 256;  // R: deep-output size (== embed when the embeddings are tied)
  std::unique_ptr<KindConfig> clone() const override { return std::make_unique<RnnSearchConfig>(*this); }
};

}  // namespace attn::models
