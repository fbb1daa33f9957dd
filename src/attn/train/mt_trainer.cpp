#include "attn/train/mt_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/cpu/threading.h"
#include "attn/models/kinds.h"
#include "attn/tensor/safetensors.h"
#include "attn/train/caption_task.h"
#include "attn/train/checkpoint_slot.h"
#include "attn/train/clip_grad.h"
#include "attn/train/data_parallel.h"
#include "attn/train/optim.h"
#include "attn/train/run_lock.h"
#include "attn/train/seed.h"
#include "attn/train/train_log.h"
#include "attn/train/training_state.h"
#include "attn/train/translation_task.h"

namespace attn::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// What one step did: its loss, or which figure was non-finite (its update skipped).
struct StepResult {
  double loss = 0;
  const char* nonfinite = nullptr;  // "loss" or "gradient norm"; nullptr: the update was made
  double value = 0;                 // the non-finite figure
};

// Training figures summed over the steps since the last progress line.
struct Window {
  double loss = 0, tokens = 0, seconds = 0;  // loss summed per target token
  int64_t steps = 0;
};

// Removes what killed checkpoint saves left behind (saying so), then checks
// that the directory holds a checkpoint exactly when resuming.
void check_run_dir(const std::string& out, bool resume) {
  const std::string ckpt = out + "/checkpoint";
  for (const auto& r : clean_checkpoint_slot(ckpt))
    std::cerr << "attn train: removed " << r << ", left by a checkpoint save that was killed\n";
  const bool has = resolve_checkpoint_slot(ckpt).has_value();
  if (resume && !has)
    throw std::runtime_error(out + ": nothing to resume (no complete checkpoint in checkpoint/ or checkpoint.prev/)");
  if (!resume && has)
    throw std::runtime_error(out + ": holds a checkpoint already; pass --resume to continue it, or use another out_dir");
}

// A data-parallel run's ranks, or null for a single process (one rank included).
Collective* ranks_of(const RunOptions& run) {
  return run.collective && run.collective->size() > 1 ? run.collective : nullptr;
}

// The run directory's lock: rank 0 alone holds it (the other ranks only read).
std::optional<RunLock> lock_run_dir(const std::string& dir, const Collective* dist) {
  if (dist && dist->rank() != 0) return std::nullopt;
  return std::optional<RunLock>(std::in_place, dir);
}

// The run's task. In a data-parallel run rank 0 makes it first (training the
// vocabularies, writing the held-out split) while the others wait, then they
// load what it wrote, as a resume does.
std::unique_ptr<TrainingTask> make_run_task(const TrainConfig& cfg, const RunOptions& run, Collective* dist,
                                            const PrintFn& print) {
  const TaskFactory& factory = run.make_task                             ? run.make_task
                               : models::reads_images(cfg.model) ? TaskFactory(make_caption_task)
                                                                         : TaskFactory(make_translation_task);
  if (!dist) return factory(cfg, run.resume, print);
  if (dist->rank() == 0) {
    std::unique_ptr<TrainingTask> task = factory(cfg, run.resume, print);
    dist->barrier();
    return task;
  }
  dist->barrier();
  return factory(cfg, true, print);
}

// The global batch's target tokens and this rank's share of them.
struct BatchTokens {
  double all = 0, mine = 0;
};

// One training run: the parts built in the order the run needs them.
class TranslationRun {
public:
  TranslationRun(const TrainConfig& config, const RunOptions& run);
  TrainSummary train();

private:
  std::unique_ptr<models::Seq2SeqModel> build_model() const;
  void restore_rank_streams();
  bool leader() const { return rank_ == 0; }
  bool clock_says_checkpoint() const;
  // One optimizer step on this rank's part of the batch (null: an empty
  // shard), skipped when a figure is non-finite; t0: when the step began.
  StepResult step(const data::Seq2SeqBatch* b, const BatchTokens& tokens, Clock::time_point t0);
  bool follow_validation();                  // a rank other than 0: takes rank 0's verdict
  void on_nonfinite(const StepResult& s);         // reports a skipped step; throws after too many in a row
  void log_progress(Window& w, int64_t per_epoch);
  bool validate();                           // true when early stopping triggers
  void checkpoint();
  void print_header() const;
  std::string newest_checkpoint();
  TrainSummary finish(const std::string& reason, double run_tokens, double run_seconds);

  const TrainConfig cfg_;
  const TrainOptions& t_;
  const RunOptions& run_;
  Collective* const dist_;  // null: a single process
  const int rank_;
  std::optional<RunLock> lock_;  // held for the whole run, before anything in the directory is read or written
  const std::string out_;
  const Clock::time_point t0_ = Clock::now();  // wall time of this invocation
  Clock::time_point last_checkpoint_ = Clock::now();
  TrainLog log_;
  std::unique_ptr<TrainingTask> task_;
  const models::ModelConfig model_config_;
  const std::string model_json_;
  std::unique_ptr<models::Seq2SeqModel> model_;
  Adam adam_;
  std::unique_ptr<GradientExchange> exchange_;  // data-parallel only
  StepFigures agreed_;                          // data-parallel: the last step's figures summed over the ranks
  TrainingState state_;
  models::LossOptions loss_options_;
  std::optional<double> last_bleu_;
  int64_t nonfinite_in_a_row_ = 0;
  int64_t start_step_ = 0;  // the step this invocation started at
};

AdamOptions adam_options(const TrainOptions& t) {
  AdamOptions ao;
  ao.lr = t.lr;
  ao.beta2 = t.beta2;
  ao.eps = t.adam_eps;
  ao.weight_decay = t.weight_decay;
  return ao;
}

TranslationRun::TranslationRun(const TrainConfig& config, const RunOptions& run)
    : cfg_(config),
      t_(cfg_.train),
      run_(run),
      dist_(ranks_of(run)),
      rank_(dist_ ? dist_->rank() : 0),
      lock_(lock_run_dir(t_.out_dir, dist_)),
      out_((leader() ? check_run_dir(t_.out_dir, run.resume) : void(), set_num_threads(t_.threads), t_.out_dir)),
      log_(leader() ? TrainLog(out_, run.resume, run.print) : TrainLog()),
      task_(make_run_task(cfg_, run, dist_, [this](const std::string& s) { log_.message(s); })),
      model_config_(task_->model_config(cfg_.model)),
      model_json_(models::to_json(model_config_)),
      model_(build_model()),
      adam_(model_->named_parameters(), adam_options(t_)),
      state_(run.resume ? TrainingState::restore(newest_checkpoint(), *model_, model_json_, adam_, t_)
                        : TrainingState(t_)) {
  loss_options_.label_smoothing = float(t_.label_smoothing);
  if (dist_) {
    exchange_ = std::make_unique<GradientExchange>(adam_.params(), *dist_, int64_t(t_.dist_bucket_mb * (1 << 20)));
    restore_rank_streams();
  }
  if (!run.resume && leader()) write_file_atomic(out_ + "/train_config.json", to_json(cfg_) + "\n");
  print_header();
}

// A rank other than 0 resumed with rank 0's streams (the checkpoint's
// module_rngs): it takes its own saved ones instead, or fresh ones derived
// from the seed, its rank and the step when the checkpoint has none for it
// (saved by fewer ranks).
void TranslationRun::restore_rank_streams() {
  if (!run_.resume || leader()) return;
  const size_t k = size_t(rank_ - 1);
  if (k < state_.rank_rngs.size())
    set_rng_states(*model_, state_.rank_rngs[k], out_ + "/checkpoint: rank " + std::to_string(rank_));
  else
    reseed_rank_streams(*model_, t_.seed, rank_, state_.position.step);
}

std::string TranslationRun::newest_checkpoint() {
  // check_run_dir found one; the note says when it is checkpoint.prev
  return *resolve_checkpoint_slot(out_ + "/checkpoint", [this](const std::string& s) { log_.message(s); });
}

void TranslationRun::checkpoint() {
  last_checkpoint_ = Clock::now();
  if (!dist_) {
    state_.rank_rngs.clear();  // a single process resumed from a data-parallel checkpoint
  } else {
    // each rank's streams, and its parameters' fingerprint: the replicas must not have drifted apart
    const std::vector<std::string> streams =
        dist_->gather(std::to_string(parameter_fingerprint(adam_.params())) + " " + rng_states_json(*model_));
    if (!leader()) return;
    state_.rank_rngs.clear();
    const std::string mine = streams[0].substr(0, streams[0].find(' '));
    for (size_t r = 0; r < streams.size(); ++r) {
      const size_t space = streams[r].find(' ');
      if (streams[r].substr(0, space) != mine)
        throw std::runtime_error("after step " + std::to_string(state_.position.step) + ", rank " + std::to_string(r) +
                                 "'s parameters differ from rank 0's (the replicas drifted apart); the last "
                                 "checkpoint is untouched");
      if (r > 0) state_.rank_rngs.push_back(streams[r].substr(space + 1));
    }
  }
  state_.save(out_ + "/checkpoint", *model_, model_json_, adam_);
  last_checkpoint_ = Clock::now();
}

bool TranslationRun::clock_says_checkpoint() const {
  return t_.checkpoint_minutes > 0 && seconds_since(last_checkpoint_) >= 60 * t_.checkpoint_minutes;
}

std::unique_ptr<models::Seq2SeqModel> TranslationRun::build_model() const {
  Rng init = make_rng(t_.seed, "init");  // the same parameters on every rank
  // rank 0's dropout is a single process's; each other rank's its own stream
  const uint64_t dropout_seed = derive_seed(t_.seed, rank_ == 0 ? "dropout" : "dropout.rank" + std::to_string(rank_));
  std::unique_ptr<models::Seq2SeqModel> m = run_.make_model ? run_.make_model(model_config_, init, dropout_seed)
                                                            : models::make_model(model_config_, init, dropout_seed);
  m->train(true);
  return m;
}

void TranslationRun::print_header() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "%s %s: %lld parameters | ", run_.resume ? "resuming" : "training",
                model_config_.type.c_str(), (long long)model_->num_parameters());
  std::string line = buf + task_->describe();
  std::snprintf(buf, sizeof buf, " | %d threads%s%s", num_threads(),
                dist_ ? (" x " + std::to_string(dist_->size()) + " ranks").c_str() : "",
                run_.resume ? (" at step " + std::to_string(state_.position.step)).c_str() : "");
  log_.message(line + buf);
}

StepResult TranslationRun::step(const data::Seq2SeqBatch* b, const BatchTokens& tokens, Clock::time_point t0) {
  adam_.zero_grad();
  double loss_v = 0;
  if (b) {
    Tensor loss = model_->loss(*b, loss_options_);
    // backward and the hooks run even for a non-finite loss: the other ranks
    // wait for this one's gradients
    if (!exchange_) {
      backward(loss);
    } else {  // this rank's mean weighted by its share of the batch's tokens; each bucket summed when done
      const float share = float(tokens.mine / tokens.all);
      backward(loss, Tensor::full(loss.shape(), share), [this](const Tensor& p) { exchange_->on_ready(p); });
    }
    loss_v = loss.item();
  }
  if (exchange_) {
    exchange_->finish(state_.position.step + 1);
    const bool stop = run_.stop && run_.stop->load();
    agreed_ = agree_on_step(*dist_, {loss_v * tokens.mine, seconds_since(t0), stop, leader() && clock_says_checkpoint()});
    loss_v = agreed_.loss_tokens / tokens.all;  // the batch's mean loss; non-finite on every rank when on one
  }
  if (run_.after_backward) run_.after_backward(adam_.params());
  // the norm is measured even without clipping (an infinite limit clips nothing)
  const double norm = clip_grad_norm(adam_.params(), t_.clip > 0 ? t_.clip : INFINITY);
  // a non-finite step leaves the parameters and Adam's moments and step count as they were
  if (!std::isfinite(loss_v)) return {loss_v, "loss", loss_v};
  if (!std::isfinite(norm)) return {loss_v, "gradient norm", norm};
  if (const std::optional<double> lr = state_.schedule.scheduled_lr(state_.position.step + 1)) adam_.set_lr(*lr);
  adam_.step();
  return {loss_v, nullptr, 0};
}

void TranslationRun::on_nonfinite(const StepResult& s) {
  const int64_t step = state_.position.step;
  ++nonfinite_in_a_row_;
  char buf[240];
  std::snprintf(buf, sizeof buf, "step %lld: non-finite %s (%s): update skipped (%lld in a row; the run stops at %lld)",
                (long long)step, s.nonfinite, nonfinite_name(s.value), (long long)nonfinite_in_a_row_,
                (long long)t_.max_nonfinite_steps);
  log_.message(buf);
  log_.skipped(step, state_.position.epoch, s.nonfinite, s.value);
  if (nonfinite_in_a_row_ < t_.max_nonfinite_steps) return;
  const std::string ckpt = out_ + "/checkpoint";
  throw std::runtime_error(
      "training stopped at step " + std::to_string(step) + ": " + std::to_string(nonfinite_in_a_row_) +
      " steps in a row had a non-finite loss or gradient norm (train.max_nonfinite_steps = " +
      std::to_string(t_.max_nonfinite_steps) + "; the last was the " + s.nonfinite + "); their updates were skipped; " +
      (resolve_checkpoint_slot(ckpt) ? "the last checkpoint, " + ckpt + ", is untouched"
                                     : std::string("no checkpoint was written")) +
      "; lower train.lr or check the data");
}

void TranslationRun::log_progress(Window& w, int64_t per_epoch) {
  const TrainerState& p = state_.position;
  ProgressRecord r;
  r.step = p.step;
  r.epoch = p.epoch;
  r.epoch_progress = double(p.data_position) / double(per_epoch);
  r.loss = w.loss / w.tokens;
  r.tgt_tokens_per_s = w.tokens / w.seconds;
  r.lr = adam_.lr();
  r.elapsed_s = state_.schedule.state().elapsed_s;
  r.seconds_left = state_.schedule.seconds_left(p.step, p.epoch, p.data_position, per_epoch, w.seconds / double(w.steps));
  log_.progress(r);
  w = Window{};
}

// Rank 0's schedule state, learning rate and early-stop verdict after a
// validation, as the text it broadcasts to the other ranks.
std::string validation_verdict(const ScheduleState& s, double lr, bool early_stop) {
  nlohmann::json j;
  j["schedule"] = s.to_json();
  j["best_score"] = s.best_score ? nlohmann::json(*s.best_score) : nlohmann::json(nullptr);
  j["lr"] = lr;
  j["early_stop"] = early_stop;
  return j.dump();
}

bool TranslationRun::follow_validation() {
  std::string text;
  dist_->broadcast(text);
  const nlohmann::json j = nlohmann::json::parse(text);
  const std::optional<double> best =
      j["best_score"].is_null() ? std::nullopt : std::optional<double>(j["best_score"].get<double>());
  state_.schedule = Schedule(t_, ScheduleState::from_json(j["schedule"].get<std::string>(), best));
  adam_.set_lr(j["lr"].get<double>());
  return j["early_stop"].get<bool>();
}

bool TranslationRun::validate() {
  if (!leader()) return follow_validation();
  const Validation v = task_->validate(*model_);
  last_bleu_ = v.bleu;
  const ValidationVerdict verdict = state_.schedule.on_validation(v, state_.position.step, adam_.lr());
  ValidationRecord r;
  if (verdict.better) {
    save_model(out_ + "/model.safetensors", *model_, model_json_);
    r.note = "new best, saved";
  } else {
    r.note = std::to_string(state_.schedule.state().bad_validations) + " without improvement";
  }
  if (verdict.new_lr) {
    adam_.set_lr(*verdict.new_lr);
    char b[64];
    std::snprintf(b, sizeof b, ", lr -> %.2e", adam_.lr());
    r.note += b;
  }
  if (t_.snapshots) {
    char name[64];
    std::snprintf(name, sizeof name, "/snapshots/step-%07lld.safetensors", (long long)state_.position.step);
    fs::create_directories(out_ + "/snapshots");
    save_model(out_ + name, *model_, model_json_);
  }
  r.step = state_.position.step;
  r.epoch = state_.position.epoch;
  r.figures = v;
  r.beam = t_.valid_beam;
  r.best = verdict.better;
  r.lr = adam_.lr();
  r.elapsed_s = state_.schedule.state().elapsed_s;
  r.wall_s = seconds_since(t0_);
  log_.validation(r);
  if (dist_) {
    std::string text = validation_verdict(state_.schedule.state(), adam_.lr(), verdict.early_stop);
    dist_->broadcast(text);
  }
  return verdict.early_stop;
}

TrainSummary TranslationRun::train() {
  TrainerState& p = state_.position;
  const int64_t start_step = start_step_ = p.step;
  double run_tokens = 0, run_s = 0;
  Window window;
  std::vector<std::vector<int64_t>> plan = task_->plan_epoch(uint64_t(p.epoch));
  const int64_t per_epoch = int64_t(plan.size());
  if (p.data_position >= per_epoch) {  // the checkpoint was taken after an epoch's last batch
    ++p.epoch;
    p.data_position = 0;
    plan = task_->plan_epoch(uint64_t(p.epoch));
  }
  std::string reason = state_.schedule.budget_reached(p.step, p.epoch);  // a resumed run that had finished
  while (reason.empty()) {
    const auto t0 = Clock::now();
    const std::vector<int64_t>& batch = plan[size_t(p.data_position)];
    const std::vector<int64_t> mine = dist_ ? shard_of(batch, rank_, dist_->size()) : batch;
    std::optional<data::Seq2SeqBatch> b;
    if (!mine.empty()) b = task_->make_batch(mine);
    BatchTokens tokens;
    if (b)
      for (const auto& tg : b->targets) tokens.mine += double(tg.size()) + 1;
    tokens.all = dist_ ? double(task_->target_tokens(batch)) : tokens.mine;
    const double ntok = tokens.all;
    const StepResult s = step(b ? &*b : nullptr, tokens, t0);
    ++p.step;  // a skipped step still consumes its batch
    ++p.data_position;
    const double dt = seconds_since(t0);
    // the ranks' mean, the same on every rank: a time budget stops them together
    state_.schedule.add_training_time(dist_ ? agreed_.seconds / dist_->size() : dt);
    run_tokens += ntok;
    run_s += dt;
    if (s.nonfinite) {
      on_nonfinite(s);  // kept out of the progress window: its loss is not a number to average
    } else {
      nonfinite_in_a_row_ = 0;
      window.loss += s.loss * ntok;
      window.tokens += ntok;
      window.seconds += dt;
      ++window.steps;
    }
    if (p.step % t_.log_every == 0 && window.steps > 0) log_progress(window, per_epoch);

    const bool epoch_end = p.data_position >= per_epoch;
    const bool validating = (t_.valid_every > 0 && p.step % t_.valid_every == 0) || (t_.valid_every == 0 && epoch_end);
    if (validating && validate()) reason = "early_stop";
    if (epoch_end) {
      ++p.epoch;
      p.data_position = 0;
      if (t_.max_epochs == 0 || p.epoch < t_.max_epochs) plan = task_->plan_epoch(uint64_t(p.epoch));
    }
    if (reason.empty()) reason = state_.schedule.budget_reached(p.step, p.epoch);
    // data-parallel: the signal and the clock as the ranks agreed on them after the step
    const bool stop = dist_ ? agreed_.stop : run_.stop && run_.stop->load();
    const bool timed = dist_ ? agreed_.checkpoint : clock_says_checkpoint();
    if (reason.empty() && ((run_.stop_after_steps > 0 && p.step - start_step >= run_.stop_after_steps) || stop))
      reason = "interrupted";
    else if (validating || (t_.checkpoint_every > 0 && p.step % t_.checkpoint_every == 0) || timed)
      checkpoint();
  }
  return finish(reason, run_tokens, run_s);
}

TrainSummary TranslationRun::finish(const std::string& reason, double run_tokens, double run_s) {
  TrainSummary sum;
  sum.completed = reason != "interrupted";
  // a completed run ends validated (so the best model reflects its last steps)
  if (sum.completed && state_.schedule.state().last_valid_step != state_.position.step) validate();
  checkpoint();
  const ScheduleState& s = state_.schedule.state();
  sum.stop_reason = reason;
  sum.steps = state_.position.step;
  sum.epoch = state_.position.epoch;
  sum.best_bleu = s.best_bleu;
  sum.best_perplexity = s.best_perplexity;
  sum.last_bleu = last_bleu_;
  sum.train_seconds = run_s;
  sum.tgt_tokens_per_s = run_s > 0 ? run_tokens / run_s : 0;
  FinishedRecord r{reason, sum.steps, sum.epoch, s.elapsed_s, seconds_since(t0_), s.best_bleu, s.best_perplexity,
                   sum.tgt_tokens_per_s, run_s};
  log_.finished(r, sum.completed);
  if (exchange_ && sum.steps > start_step_) {  // how much of the gradient sums the backward pass did not hide
    const double steps = double(sum.steps - start_step_), wait_ms = 1e3 * exchange_->seconds_waiting() / steps;
    char b[240];
    std::snprintf(b, sizeof b,
                  "gradient sums over %d ranks in %lld buckets: %.2f ms per step waited after the backward pass "
                  "(%.1f%% of rank 0's %.1f ms step)",
                  dist_->size(), (long long)exchange_->buckets(), wait_ms, 100 * wait_ms / (1e3 * run_s / steps),
                  1e3 * run_s / steps);
    log_.message(b);
  }
  return sum;
}

}  // namespace

TrainSummary train_translation(const TrainConfig& config, const RunOptions& run) {
  TranslationRun r(config, run);
  return r.train();
}

}  // namespace attn::train
