// Small models of the kinds with a fused search step (rnnsearch, luong with two
// LSTM layers, the Transformer), vocabulary kVocab, dropout 0, eval mode: the
// configurations the compute-type and shortlist tests run every decoder on.
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/kinds.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/random.h"

namespace attn::testing {

constexpr int64_t kFusedVocab = 40;

inline const char* const kFusedKindConfigs[] = {
    R"({"type": "rnnsearch", "src_vocab": 40, "tgt_vocab": 40, "embed": 32, "encoder_hidden": 48,
        "decoder_hidden": 64, "attention": 40, "readout": 48, "dropout": 0.0})",
    R"({"type": "luong", "src_vocab": 40, "tgt_vocab": 40, "embed": 32, "encoder_hidden": 48, "decoder_hidden": 64,
        "decoder_layers": 2, "cell": "lstm", "score": "general", "dropout": 0.0})",
    R"({"type": "transformer", "src_vocab": 40, "tgt_vocab": 40, "embed": 64, "heads": 4, "feed_forward": 96,
        "encoder_layers": 2, "decoder_layers": 2, "max_positions": 64, "dropout": 0.0})",
};

// a model of `config` (JSON or a ModelConfig) with weights drawn from seed 11, in eval mode
inline std::unique_ptr<models::Seq2SeqModel> make_fused_kind(const models::ModelConfig& config) {
  Rng init(11);
  auto m = models::make_model(config, init, 1);
  m->train(false);
  return m;
}
inline std::unique_ptr<models::Seq2SeqModel> make_fused_kind(const char* json) {
  return make_fused_kind(models::model_config_from_json(json));
}

}  // namespace attn::testing
