#include "attn/train/training_state.h"

#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/train/checkpoint_slot.h"

namespace attn::train {
namespace {

// The "rank_rngs" of the trainer state's "extra" (absent: a single process's checkpoint).
std::vector<std::string> saved_rank_rngs(const std::string& extra_json, const std::string& dir) {
  const nlohmann::json extra = nlohmann::json::parse(extra_json);  // checked by load_checkpoint
  std::vector<std::string> out;
  if (!extra.is_object() || !extra.contains("rank_rngs")) return out;
  const nlohmann::json& r = extra["rank_rngs"];
  if (!r.is_array()) throw std::runtime_error(dir + "/trainer_state.json: extra.rank_rngs is not a list");
  for (const auto& v : r) {
    if (!v.is_string()) throw std::runtime_error(dir + "/trainer_state.json: extra.rank_rngs holds a non-string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

void TrainingState::save(const std::string& dir, const nn::Module& model, const std::string& model_json,
                         const Optimizer& optimizer) const {
  CheckpointSave cs;
  cs.model = &model;
  cs.config_json = model_json;
  cs.optimizer = &optimizer;
  cs.trainer = position;
  cs.trainer.best_valid_score = schedule.state().best_score;
  cs.trainer.extra_json = schedule.state().to_json();
  if (!rank_rngs.empty()) {
    nlohmann::ordered_json extra = nlohmann::ordered_json::parse(cs.trainer.extra_json);
    extra["rank_rngs"] = rank_rngs;
    cs.trainer.extra_json = extra.dump();
  }
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
  s.rank_rngs = saved_rank_rngs(lc.trainer.extra_json, dir);
  // Checkpoints written before every stream was saved kept the model's dropout
  // stream as the trainer's rng_state.
  if (!lc.module_rngs_restored && !lc.trainer.rng_state.empty())
    for (auto& [name, rng] : model.named_rngs())
      if (name == "dropout_rng") rng->set_state(lc.trainer.rng_state);
  return s;
}

}  // namespace attn::train
