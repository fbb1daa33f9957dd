// The tiny rnnsearch model of the safetensors/checkpoint target and of the
// seeds make_seeds.cpp writes: one config, so the seeds load into the target.
#pragma once
#include "attn/models/config.h"
#include "attn/models/kinds.h"
#include "attn/models/rnnsearch/rnnsearch_config.h"

namespace attn::fuzz {

inline models::ModelConfig tiny_config() {
  models::ModelConfig c = models::model_config("rnnsearch");
  c.src_vocab = c.tgt_vocab = 8;
  models::RnnSearchConfig& r = c.section<models::RnnSearchConfig>();
  c.embed = r.encoder_hidden = r.decoder_hidden = r.attention = r.readout = 4;
  return c;
}

}  // namespace attn::fuzz
