// The toy task of data/toy_tasks.h as a training run, for the end-to-end and
// trainer tests: its corpora as files and a small model's config.
#pragma once
#include <cstdint>
#include <string>

#include "attn/data/line_reader.h"
#include "attn/data/toy_tasks.h"

namespace attn::testing {

// dir/name.en and dir/name.fr: n pairs of the reversal task drawn with `seed`.
inline void write_toy(const std::string& dir, const std::string& name, int64_t n, uint64_t seed) {
  const data::ParallelCorpus c = data::reversal_corpus(n, seed);
  data::write_lines(dir + "/" + name + ".en", c.src);
  data::write_lines(dir + "/" + name + ".fr", c.tgt);
}

// A small rnnsearch: the model section's lines before model_extra.
constexpr const char* kToyRnnSearch =
    "  type: rnnsearch\n"
    "  embed: 32\n"
    "  encoder_hidden: 32\n"
    "  decoder_hidden: 64\n"
    "  attention: 32\n"
    "  readout: 32\n";

// A tiny Transformer (2 + 2 layers of 2 heads): its maps have layers and heads.
constexpr const char* kToyTransformer =
    "  type: transformer\n"
    "  embed: 32\n"
    "  encoder_layers: 2\n"
    "  decoder_layers: 2\n"
    "  heads: 2\n"
    "  feed_forward: 64\n"
    "  max_positions: 64\n"
    "  dropout: 0\n";

// YAML of a run on dir/{train,valid}.{en,fr} into `out`: a vocabulary of 80
// pieces, the model `model` + model_extra, and train options out_dir,
// max_tokens 800, lr 0.003, lr_patience 2 + train_extra.
inline std::string toy_config(const std::string& dir, const std::string& out, const std::string& train_extra,
                              const std::string& model_extra = "", const std::string& model = kToyRnnSearch) {
  return "data:\n"
         "  train_src: " + dir + "/train.en\n"
         "  train_tgt: " + dir + "/train.fr\n"
         "  valid_src: " + dir + "/valid.en\n"
         "  valid_tgt: " + dir + "/valid.fr\n"
         "vocab:\n"
         "  size: 80\n"
         "model:\n" + model + model_extra +
         "train:\n"
         "  out_dir: " + out + "\n"
         "  max_tokens: 800\n"
         "  lr: 0.003\n"
         "  lr_patience: 2\n" + train_extra;
}

// The toy corpora in `dir` (train: 400 pairs, valid: 30) and `dir`/run.yaml,
// a run of toy_config into `out` (dir/run when empty) with train_extra;
// returns the config's path.
inline std::string write_toy_run(const std::string& dir, const std::string& train_extra, std::string out = "") {
  write_toy(dir, "train", 400, 1);
  write_toy(dir, "valid", 30, 2);
  if (out.empty()) out = dir + "/run";
  const std::string cfg = dir + "/run.yaml";
  data::write_lines(cfg, {toy_config(dir, out, train_extra)});
  return cfg;
}

}  // namespace attn::testing
