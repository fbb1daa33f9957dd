// The state of a training run that a checkpoint saves and a resume restores:
// where the run is in its data (step, epoch, batches consumed) and its
// schedule's counters, saved together with the model's weights, every random
// stream of its layers (Module::named_rngs()) and the optimizer's state as one
// checkpoint directory (train/checkpoint.h). With the same config, seed and
// thread count, a run restored from it continues bit for bit as the run that
// was never interrupted.
#pragma once
#include <string>
#include <vector>

#include "attn/nn/module.h"
#include "attn/train/checkpoint.h"
#include "attn/train/optim.h"
#include "attn/train/schedule.h"

namespace attn::train {

struct TrainingState {
  explicit TrainingState(const TrainOptions& options) : schedule(options) {}
  TrainerState position;  // step, epoch, data_position (best_valid_score mirrors the schedule's)
  Schedule schedule;
  // A data-parallel run (data_parallel.h): the random streams of ranks 1..N-1,
  // each a JSON object's text {name: state} (rng_states_json), saved in the
  // trainer state's "extra" beside the schedule; rank 0's are the model's own
  // "module_rngs". Empty for a single process.
  std::vector<std::string> rank_rngs;

  // Replaces the checkpoint directory `dir` as a whole (checkpoint_slot.h).
  void save(const std::string& dir, const nn::Module& model, const std::string& model_json,
            const Optimizer& optimizer) const;

  // Loads `dir` into model and optimizer (in place) and returns the state.
  // Throws std::runtime_error naming the directory when the checkpoint's
  // model config differs from model_json, or as load_checkpoint does.
  static TrainingState restore(const std::string& dir, nn::Module& model, const std::string& model_json,
                               Optimizer& optimizer, const TrainOptions& options);
};

}  // namespace attn::train
