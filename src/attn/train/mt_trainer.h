// The trainer: one loop for every model kind. Its task (train/task.h; for the
// translation models translation_task.h, which reads the corpora and trains or
// loads SentencePiece vocabularies) gives the data, batches and validation;
// the trainer builds the model from the config and trains it with Adam,
// gradient clipping, label smoothing, validation (perplexity and detokenised
// BLEU) every N steps, learning-rate decay on plateau, early stopping and
// keep-best; it checkpoints everything needed to continue the same run.
//
// It is a composition of parts with one job each: the task (the run's data,
// batches and validation), the schedule (schedule.h: LR decay, early
// stopping, budget), the state a checkpoint saves
// and a resume restores (training_state.h) and the log (train_log.h).
//
// The run directory (train.out_dir):
//   train_config.json         the resolved configuration, for the record
//   vocab.src.model / vocab.tgt.model   SentencePiece models (copies when joint)
//   model.safetensors, config.json      the best model so far (what `attn translate --model DIR` reads)
//   checkpoint/               the latest training checkpoint (train/checkpoint.h): weights, Adam
//                             state and LR, step, epoch, batches consumed in the epoch, dropout Rng
//                             state, best score, plateau counters
//   log.jsonl                 one JSON object per progress line and per validation, and a
//                             {"type": "finished", ...} line when the run completes
//   test.src / test.ref       the held-out test split (data.test_holdout > 0)
//
// Resuming (RunOptions::resume) loads checkpoint/ and continues with the next
// batch of the same epoch plan: with the same config, seed and thread count,
// stopping and resuming gives bit-identical parameters to not stopping.
//
// Data-parallel (RunOptions::collective, data_parallel.h): every rank runs
// this same loop on its shard of each batch; the ranks other than 0 read the
// run directory (vocabularies, checkpoint) and never write it.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "attn/models/seq2seq.h"
#include "attn/train/collective.h"
#include "attn/train/mt_config.h"
#include "attn/train/task.h"

namespace attn::train {

// Builds the network of a run: parameters drawn from `init`, dropout streams
// seeded from `dropout_seed` (models::make_model is the default).
using ModelFactory =
    std::function<std::unique_ptr<models::Seq2SeqModel>(const models::ModelConfig&, Rng& init, uint64_t dropout_seed)>;

struct RunOptions {
  bool resume = false;                   // continue from out_dir/checkpoint (required to exist)
  int64_t stop_after_steps = 0;          // interrupt after this many steps of this invocation:
                                         // checkpoint and return, as if killed (0: off)
  const std::atomic<bool>* stop = nullptr;  // when set to true (e.g. by SIGINT): checkpoint and return
  std::function<void(const std::string&)> print;  // progress lines; default: stdout
  ModelFactory make_model;               // a model kind of the caller's; default: models::make_model
  TaskFactory make_task;                 // the run's data, batches and validation (train/task.h);
                                         // default: make_caption_task for a model that reads
                                         // images (show_attend_tell), else make_translation_task
  // Called after every backward, before gradient clipping, with the model's
  // parameters (their .grad() filled): where e.g. a data-parallel run sums
  // the gradients of its replicas. Default: nothing.
  std::function<void(const nn::NamedTensors& params)> after_backward;
  // The ranks of a data-parallel run (collective.h; docs/distributed-training.md):
  // each rank trains on its part of every batch, the gradients are summed over
  // the ranks before after_backward, rank 0 alone validates, logs and writes
  // the run directory. Null or one rank: a single process.
  Collective* collective = nullptr;
};

struct TrainSummary {
  int64_t steps = 0;                 // optimizer steps in total (including resumed ones)
  int64_t epoch = 0;                 // epoch reached (0-based)
  bool completed = false;            // false: interrupted (stop_after_steps / stop flag)
  std::string stop_reason;           // "max_epochs", "max_steps", "max_minutes", "early_stop", "interrupted"
  std::optional<double> best_bleu;   // best validation BLEU seen by this run directory
  std::optional<double> best_perplexity;
  std::optional<double> last_bleu;   // the last validation's BLEU
  double tgt_tokens_per_s = 0;       // mean training throughput of this invocation (validation excluded)
  double train_seconds = 0;          // training time of this invocation (validation excluded)
};

// Throws std::invalid_argument / std::runtime_error on bad configs, unreadable
// or mismatched corpora (naming files and line counts), a run directory that
// already holds a checkpoint without resume, or a checkpoint of another model.
TrainSummary train_translation(const TrainConfig& config, const RunOptions& run = {});

}  // namespace attn::train
