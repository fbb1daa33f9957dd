// A trained translation model on disk: the run directory's best weights,
// model config and vocabularies (written by train/mt_trainer.h), loaded for
// decoding (attn translate, translate_lines).
#pragma once
#include <memory>
#include <string>

#include "attn/data/vocab.h"
#include "attn/models/seq2seq.h"

namespace attn::decode {

struct TranslationModel {
  std::unique_ptr<models::Seq2SeqModel> model;  // in eval mode
  std::unique_ptr<data::SubwordVocab> src_vocab, tgt_vocab;
};

// Reads DIR/model.safetensors (or `weights`, e.g. DIR/checkpoint/model.safetensors),
// its model config, and DIR/vocab.src.model, DIR/vocab.tgt.model. Throws
// std::runtime_error naming the missing or mismatched file.
TranslationModel load_translation_model(const std::string& dir, const std::string& weights = "");

}  // namespace attn::decode
