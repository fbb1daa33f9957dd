#include "attn/train/training_state.h"

#include <stdexcept>

#include "attn/train/checkpoint_slot.h"

namespace attn::train {

void TrainingState::save(const std::string& dir, const nn::Module& model, const std::string& model_json,
                         const Optimizer& optimizer) const {
  CheckpointSave cs;
  cs.model = &model;
  cs.config_json = model_json;
  cs.optimizer = &optimizer;
  cs.trainer = position;
  cs.trainer.best_valid_score = schedule.state().best_score;
  cs.trainer.extra_json = schedule.state().to_json();
  save_checkpoint_slot(dir, cs);
}

TrainingState TrainingState::restore(const std::string& dir, nn::Module& model, const std::string& model_json,
                                     Optimizer& optimizer, const TrainOptions& options) {
  LoadedCheckpoint lc = load_checkpoint(dir, {&model, &optimizer});
  if (lc.config_json != model_json)
    throw std::runtime_error(dir + ": the checkpoint's model config " + lc.config_json + " differs from this config's " +
                             model_json);
  TrainingState s(options);
  s.position = lc.trainer;
  s.schedule = Schedule(options, ScheduleState::from_json(lc.trainer.extra_json, lc.trainer.best_valid_score));
  // Checkpoints written before every stream was saved kept the model's dropout
  // stream as the trainer's rng_state.
  if (!lc.module_rngs_restored && !lc.trainer.rng_state.empty())
    for (auto& [name, rng] : model.named_rngs())
      if (name == "dropout_rng") rng->set_state(lc.trainer.rng_state);
  return s;
}

}  // namespace attn::train
