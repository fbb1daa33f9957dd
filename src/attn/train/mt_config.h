// The configuration of a translation training run (`attn train --config
// FILE.yaml [--set key=value ...]`): four sections, every key optional
// except the data paths and out_dir, unknown keys rejected by name.
//
//   data:   captioning (model.type show_attend_tell): captions (a Karpathy split JSON,
//           data/caption_corpus.h) and image_root (its images' folder; default the
//           JSON's folder), max_tgt_tokens. Translation:
//           train_src / train_tgt (two files, plain or gzip) or train_tsv (one
//           tab-separated file); valid_src / valid_tgt or valid_tsv, or
//           valid_holdout / test_holdout (source sentences held out of the
//           training corpus, see data/split.h) and split_seed; tsv_src_column,
//           tsv_tgt_column; max_src_tokens, max_tgt_tokens, max_ratio (length filter)
//   vocab:  joint, size, type (unigram | bpe), character_coverage,
//           src_model / tgt_model (existing SentencePiece models; else trained)
//   model:  see models/config.h
//   train:  see TrainOptions below
//
// Relative paths are relative to the working directory.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/models/config.h"

namespace attn::train {

struct DataConfig {
  std::string captions;              // captioning: Karpathy split JSON (train: train + restval, valid: val)
  std::string image_root;            // captioning: folder the JSON's image paths start from ("": the JSON's folder)
  std::string train_src, train_tgt;  // aligned text files (plain or gzip)
  std::string train_tsv;             // or: one tab-separated file
  std::string valid_src, valid_tgt;  // validation files, or
  std::string valid_tsv;             // one tab-separated validation file, or
  int64_t valid_holdout = 0;         // source sentences of the training corpus held out for validation
  int64_t test_holdout = 0;          // ... and for a test split (written to out_dir/test.{src,ref})
  uint64_t split_seed = 1;           // which sentences are held out; apart from train.seed so that
                                     // runs with other training seeds share one test split
  int tsv_src_column = 0;            // TSV field of the source sentence
  int tsv_tgt_column = 1;            // TSV field of the target sentence
  int64_t max_src_tokens = 100;      // training pairs with longer sources (in pieces) are dropped
  int64_t max_tgt_tokens = 100;      // ... or longer targets
  double max_ratio = 3.0;            // ... or a longer/shorter length ratio above this (0: off)
  double casual_source_share = 0.0;  // share of training pairs added again with a lower-cased source
                                     // without final punctuation (data/augment.h); never valid or test
};

struct VocabConfig {
  bool joint = true;                 // one SentencePiece model for both languages
  int size = 8000;                   // pieces per model, including the 4 specials
  std::string type = "unigram";      // unigram | bpe
  double character_coverage = 1.0;   // SentencePiece's character_coverage
  std::string src_model, tgt_model;  // existing models to use instead of training (both, or src_model when joint)
};

struct TrainOptions {
  std::string out_dir;               // run directory: model, vocabularies, checkpoint, log (required)
  uint64_t seed = 1;                 // parameters, dropout, data order; same seed + threads => same run
  int threads = 0;                   // 0: all cores
  int64_t max_tokens = 4096;         // padded tokens per batch (data/batcher.h)
  int64_t max_sentences = 0;         // sentences per batch, 0: no limit
  double lr = 1e-3;                  // Adam learning rate
  double beta2 = 0.999;              // Adam beta2
  double adam_eps = 1e-8;            // Adam epsilon (added to sqrt(v_hat))
  int64_t warmup_steps = 0;          // > 0: the inverse-square-root schedule (Vaswani et al. 2017, sec. 5.3):
                                     // lr * step / warmup_steps up to warmup_steps, then lr * sqrt(warmup_steps / step)
                                     // (lr is the peak; needs lr_patience 0). 0: lr constant but for the plateau decay
  int64_t decay_steps = 0;           // with warmup_steps: > warmup_steps replaces the inverse square root by a
                                     // straight line from lr down to 0 at step decay_steps (0 after it), for a
                                     // run of a known budget; 0: the inverse square root
  double weight_decay = 0;           // Adam L2
  double clip = 1.0;                 // global gradient-norm clip (0: off)
  double label_smoothing = 0.1;      // cross-entropy label smoothing
  int64_t max_epochs = 10;           // stop after this many epochs (0: no limit)
  int64_t max_steps = 0;             // ... or this many optimizer steps (0: no limit)
  double max_minutes = 0;            // ... or this much training time (0: no limit)
  int64_t valid_every = 1000;        // validate every N steps (0: at the end of every epoch)
  int64_t log_every = 100;           // progress line every N steps
  double checkpoint_minutes = 5;     // also checkpoint when this much wall time passed since the last one (0: off)
  int64_t checkpoint_every = 0;      // also checkpoint every N steps (0: off)
  int64_t max_nonfinite_steps = 5;   // stop the run after this many steps in a row with a NaN/Inf loss or
                                     // gradient norm (each such step is skipped: no update)
  // Data-parallel runs under mpirun (docs/distributed-training.md); a single process ignores both.
  double dist_timeout_s = 600;       // a rank that does not reach a step's gradient sum (or the wait on
                                     // rank 0's validation and checkpoint) within this time ends the job
  double dist_bucket_mb = 8;         // gradients summed in buckets of about this size, each started as
                                     // soon as the backward pass has finished its parameters
  std::string metric = "bleu";       // what keep-best, LR decay and early stopping watch: bleu | perplexity
  double lr_decay = 0.5;             // multiply the LR by this when the metric did not improve ...
  int64_t lr_patience = 1;           // ... for this many validations in a row (0: never decay)
  double min_lr = 1e-5;              // the LR never decays below this
  int64_t early_stop = 5;            // stop after this many validations without improvement (0: never)
  int64_t valid_bleu_sentences = 0;  // validation sentences translated for BLEU (0: all)
  int valid_beam = 1;                // beam for validation BLEU (1: greedy)
  int64_t valid_batch_sentences = 64;  // sentences per decoding batch in validation
  bool snapshots = false;            // also keep each validation's model as out_dir/snapshots/step-N.safetensors
                                     // (for `attn average` and for scoring the run at a given time)
};

struct TrainConfig {
  DataConfig data;
  VocabConfig vocab;
  models::ModelConfig model;  // src_vocab / tgt_vocab are filled in from the vocabularies
  TrainOptions train;
};

// Reads a YAML file, applies `overrides` ("section.key=value", the value
// parsed as a YAML scalar, e.g. "train.lr=5e-4", "model.type=luong") and
// checks it: unknown sections or keys and mistyped values throw
// std::invalid_argument naming "<section>.<key>" (and the file).
TrainConfig load_train_config(const std::string& yaml_path, const std::vector<std::string>& overrides = {});
// The same from YAML text (tests, and configs built in code).
TrainConfig parse_train_config(const std::string& yaml_text, const std::vector<std::string>& overrides = {},
                               const std::string& origin = "<config>");

// The whole config as JSON text (written into the run directory for the record).
std::string to_json(const TrainConfig& c);

}  // namespace attn::train
