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
  std::unique_ptr<data::SubwordVocab> src_vocab, tgt_vocab;  // src_vocab null for a captioner
};

// Reads DIR/model.safetensors (or `weights`, e.g. DIR/checkpoint/model.safetensors),
// its model config, and DIR/vocab.src.model, DIR/vocab.tgt.model (a captioner,
// show_attend_tell, reads images: no vocab.src.model, src_vocab null). Throws
// std::runtime_error naming the missing or mismatched file.
TranslationModel load_model_dir(const std::string& dir, const std::string& weights = "");
// load_model_dir for the text commands (translate, serve, demo): also
// throws, naming the directory, for a model that reads images.
TranslationModel load_translation_model(const std::string& dir, const std::string& weights = "");

}  // namespace attn::decode
