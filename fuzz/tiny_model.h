// The tiny rnnsearch model of the safetensors/checkpoint target and of the
// seeds make_seeds.cpp writes: one config, so the seeds load into the target.
#pragma once
#include "attn/models/config.h"

namespace attn::fuzz {

inline models::ModelConfig tiny_config() {
  models::ModelConfig c;
  c.src_vocab = c.tgt_vocab = 8;
  c.embed = c.encoder_hidden = c.decoder_hidden = c.attention = c.readout = 4;
  return c;
}

}  // namespace attn::fuzz
