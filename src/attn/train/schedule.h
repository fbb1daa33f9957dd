// The schedule of a training run: what each validation means for the run
// (a new best model to keep, learning-rate decay after a plateau, early
// stopping) and when the budget (epochs, steps, training minutes) is spent.
// Its counters are part of the training state: a checkpoint saves them
// (to_json) and a resume restores them, so a run interrupted in the middle of
// a plateau decays and stops where the uninterrupted run does.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "attn/train/mt_config.h"

namespace attn::train {

// One validation's figures.
struct Validation {
  double perplexity = 0;   // exp(mean token NLL) of the validation set, teacher-forced
  double bleu = 0;         // corpus BLEU of the decoded validation sentences
  double seconds = 0;      // time the validation took
  int64_t sentences = 0;   // sentences decoded for BLEU
  std::optional<double> exact_match;  // captioning: percent of decoded captions equal to one of their
                                      // image's references (absent for translation)
};

struct ScheduleState {
  std::optional<double> best_score;      // best value of train.metric so far
  std::optional<double> best_bleu;       // best BLEU seen, whatever the metric
  std::optional<double> best_perplexity; // best perplexity seen
  int64_t bad_validations = 0;           // validations in a row without a better metric
  int64_t last_valid_step = -1;          // step of the last validation
  double elapsed_s = 0;                  // training time so far, validation excluded, all invocations

  // JSON object text with the fields above except best_score (which the
  // checkpoint keeps as TrainerState::best_valid_score); from_json restores it.
  std::string to_json() const;
  static ScheduleState from_json(const std::string& json_text, std::optional<double> best_score);
};

// What one validation decided.
struct ValidationVerdict {
  bool better = false;            // a new best: keep this model
  std::optional<double> new_lr;   // the learning rate decayed to this
  bool early_stop = false;        // train.early_stop validations in a row without improvement
};

class Schedule {
public:
  explicit Schedule(const TrainOptions& options, ScheduleState state = {}) : t_(options), s_(state) {}

  // Records validation `v` at `step` with the current learning rate `lr`.
  // Better means: a higher BLEU (metric bleu; a tie broken by a lower
  // perplexity) or a lower perplexity (metric perplexity). Not better counts
  // one more bad validation; every lr_patience-th one in a row multiplies the
  // learning rate by lr_decay (never below min_lr).
  ValidationVerdict on_validation(const Validation& v, int64_t step, double lr);

  // The learning rate of optimizer step `step` (1-based) when the schedule
  // sets it: with warmup_steps W > 0, lr * step / W for step <= W, then
  // lr * sqrt(W / step) (the inverse-square-root warm-up, Vaswani et al. 2017,
  // sec. 5.3, with lr the peak), or with decay_steps D > W the straight line
  // lr * (D - step) / (D - W), 0 from D on; nullopt without warm-up (the LR is
  // what the plateau decay of on_validation left).
  std::optional<double> scheduled_lr(int64_t step) const;

  // Adds a training step's seconds to the budget.
  void add_training_time(double seconds) { s_.elapsed_s += seconds; }

  // The limit reached at (step, epoch): "max_steps", "max_minutes",
  // "max_epochs" (checked in that order), or "" while training goes on.
  std::string budget_reached(int64_t step, int64_t epoch) const;

  // Seconds of training left before the nearest limit, at step_s seconds per
  // step and per_epoch steps per epoch (infinity without a limit).
  double seconds_left(int64_t step, int64_t epoch, int64_t data_position, int64_t per_epoch, double step_s) const;

  const ScheduleState& state() const { return s_; }

private:
  TrainOptions t_;
  ScheduleState s_;
};

}  // namespace attn::train
