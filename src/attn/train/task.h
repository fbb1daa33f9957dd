// What a model kind's training reads, apart from the model: its data, how the
// data is cut into batches, and how a model is validated. The trainer
// (trainer.h) runs one loop for every task: steps, schedule, checkpoints,
// logging and resuming are the same whether the examples are sentence pairs
// (translation_task.h) or images with captions.
//
// A task is deterministic: its epoch plans depend only on its data, the
// config and the epoch (never on the thread count or the clock), so a resumed
// run replays the same batches.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "attn/data/batch.h"
#include "attn/models/config.h"
#include "attn/models/seq2seq.h"
#include "attn/train/mt_config.h"
#include "attn/train/schedule.h"

namespace attn::train {

using PrintFn = std::function<void(const std::string&)>;

class TrainingTask {
public:
  virtual ~TrainingTask() = default;

  // The config's model completed with what the data decides (vocabulary
  // sizes, special ids) and validated (models::validate).
  virtual models::ModelConfig model_config(const models::ModelConfig& config) const = 0;

  // The batches of `epoch` as example indices, every training example exactly
  // once: [batches][batch_size].
  virtual std::vector<std::vector<int64_t>> plan_epoch(uint64_t epoch) const = 0;

  // The padded batch of the training examples `indices` (data/batch.h: src is
  // whatever the model's encoder reads, targets are token ids).
  virtual data::Seq2SeqBatch make_batch(const std::vector<int64_t>& indices) const = 0;

  // The target tokens the loss of make_batch(indices) averages over (each
  // target's length + 1): a data-parallel run weighs each rank's part of a
  // batch by them (data_parallel.h). The default makes the batch and counts.
  virtual int64_t target_tokens(const std::vector<int64_t>& indices) const {
    int64_t n = 0;
    for (const auto& t : make_batch(indices).targets) n += int64_t(t.size()) + 1;
    return n;
  }

  // Validation figures of `model`: it runs in eval mode without autograd and
  // is left in training mode.
  virtual Validation validate(models::Seq2SeqModel& model) const = 0;

  // The run header's description of the data, e.g. "vocab 8000/8000 | train
  // 29000 pairs (12 dropped: ...) | valid 1014".
  virtual std::string describe() const = 0;
};

// Makes a run's task: reads its data and makes (or, resuming, reloads) its
// vocabularies in the run directory, reporting through `print`.
using TaskFactory =
    std::function<std::unique_ptr<TrainingTask>(const TrainConfig& config, bool resume, const PrintFn& print)>;

}  // namespace attn::train
