// Checkpoints: a model's weights as a safetensors file, and a training
// checkpoint directory that also holds the optimizer and trainer state.
//
// Model file (save_model / load_model): the parameters by their dotted names
// (Module::named_parameters(), PyTorch's names), F32, in registration order;
// __metadata__ {"format": "attn", "config": <model config JSON>}. A standard
// safetensors reader (Python `safetensors`, torch users) reads it as is. The
// same config is written to config.json in the same folder.
//
// Checkpoint directory (save_checkpoint / load_checkpoint):
//   DIR/model.safetensors      weights, as above
//   DIR/config.json            the model config (for people and tools)
//   DIR/optimizer.safetensors  Optimizer::state() (see optim.h); metadata: the
//                              optimizer's name() and lr() (optional file)
//   DIR/trainer_state.json     TrainerState, the state of every random stream of
//                              the model (Module::named_rngs(), "module_rngs"),
//                              the values of its buffers (Module::named_buffers(),
//                              "module_buffers": {name: [numbers]}, only when it
//                              has any) and the checkpoint id
//
// Crash safety: every file is written atomically (temporary file in the same
// folder, fsync, rename, fsync of the folder), so a kill at any moment leaves
// at each path either the complete old file or the complete new one. A killed
// writer may leave its temporary file (`<path>.tmp.<pid>`) behind; loading only
// ever opens the exact names above, so such leftovers are ignored (and may be
// deleted by hand). The four files are not replaced together: a save killed
// halfway leaves new files beside old ones. trainer_state.json is written last
// and every save stamps all files with a fresh checkpoint id, so
// load_checkpoint detects such a mixed directory and refuses it (naming both
// ids) instead of resuming from inconsistent state. The trainer never writes
// into a live checkpoint: it saves a new directory and swaps it in whole
// (checkpoint_slot.h), keeping the previous one until the new one is complete.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "attn/nn/module.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/optim.h"

namespace attn::train {

// ---- model weights: one safetensors file ----

// Writes `model`'s parameters to `path` and `config_json` (a JSON object's
// text, e.g. "{\"hidden\": 256}") into its metadata and into config.json in
// the same folder; both atomically. Throws std::invalid_argument when
// config_json is not a JSON object, std::runtime_error naming the path on I/O errors.
void save_model(const std::string& path, const nn::Module& model, const std::string& config_json);

// Loads `path` into `model`'s parameters in place (nn::load_into_params) and
// returns the config JSON from its metadata ("{}" when the file has none, as
// files written by other tools). Throws std::runtime_error naming the file.
std::string load_model(const std::string& path, nn::Module& model);

// ---- training checkpoint directory ----

// Where a training run is, beyond the weights and the optimizer.
struct TrainerState {
  int64_t step = 0;                        // optimizer steps taken so far
  int64_t epoch = 0;                       // current epoch, 0-based
  int64_t data_position = 0;               // batches of the current epoch already consumed
  std::string rng_state;                   // attn::Rng::state() of a Rng of the run outside the model; "" when none
  std::optional<double> best_valid_score;  // best validation score so far; empty before the first validation
  std::string extra_json = "{}";           // the trainer's own state (a JSON object's text, e.g. schedule counters)
};

// What save_checkpoint writes.
struct CheckpointSave {
  const nn::Module* model = nullptr;          // required: its parameters go to model.safetensors
  std::string config_json = "{}";             // the model config, a JSON object's text
  const Optimizer* optimizer = nullptr;       // optional: its state goes to optimizer.safetensors
  TrainerState trainer;                       // goes to trainer_state.json
};

// Where load_checkpoint restores into.
struct CheckpointLoad {
  nn::Module* model = nullptr;      // required: parameters overwritten in place
  Optimizer* optimizer = nullptr;   // optional: state restored; the directory must then hold
                                    // optimizer.safetensors written by the same kind of optimizer
};

struct LoadedCheckpoint {
  std::string config_json;  // from model.safetensors' metadata
  TrainerState trainer;     // from trainer_state.json
  bool module_rngs_restored = false;  // false: the file predates "module_rngs" and the streams are untouched
};

// Creates `dir` if needed and writes the files listed above, each atomically,
// trainer_state.json last. Throws std::invalid_argument when `what.model` is
// null or config_json is not a JSON object, std::runtime_error on I/O errors.
void save_checkpoint(const std::string& dir, const CheckpointSave& what);

// Reads and validates every file (ids consistent, names and shapes matching
// the model and the optimizer, a valid state for exactly the model's random
// streams) before changing the model or the optimizer, so
// a failed load leaves both untouched. Throws std::runtime_error naming the
// file and the problem.
LoadedCheckpoint load_checkpoint(const std::string& dir, const CheckpointLoad& into);

}  // namespace attn::train
