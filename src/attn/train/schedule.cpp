#include "attn/train/schedule.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace attn::train {
namespace {

nlohmann::json optional_json(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::optional<double> optional_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<double>();
}

}  // namespace

std::string ScheduleState::to_json() const {
  nlohmann::json j;
  j["bad_validations"] = bad_validations;
  j["last_valid_step"] = last_valid_step;
  j["elapsed_s"] = elapsed_s;
  j["best_bleu"] = optional_json(best_bleu);
  j["best_perplexity"] = optional_json(best_perplexity);
  return j.dump();
}

ScheduleState ScheduleState::from_json(const std::string& text, std::optional<double> best_score) {
  ScheduleState s;
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    s.bad_validations = j.value("bad_validations", int64_t(0));
    s.last_valid_step = j.value("last_valid_step", int64_t(-1));
    s.elapsed_s = j.value("elapsed_s", 0.0);
    s.best_bleu = optional_from(j, "best_bleu");
    s.best_perplexity = optional_from(j, "best_perplexity");
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(std::string("trainer state 'extra': malformed schedule counters: ") + e.what());
  }
  s.best_score = best_score;
  return s;
}

std::optional<double> Schedule::scheduled_lr(int64_t step) const {
  if (t_.warmup_steps <= 0) return std::nullopt;
  const double s = double(std::max<int64_t>(step, 1)), w = double(t_.warmup_steps);
  if (s <= w) return t_.lr * s / w;
  if (t_.decay_steps > 0) return t_.lr * std::max(0.0, (double(t_.decay_steps) - s) / (double(t_.decay_steps) - w));
  return t_.lr * std::sqrt(w / s);
}

ValidationVerdict Schedule::on_validation(const Validation& v, int64_t step, double lr) {
  const bool higher_is_better = t_.metric == "bleu";
  const double score = higher_is_better ? v.bleu : v.perplexity;
  ValidationVerdict out;
  if (!s_.best_score)
    out.better = true;
  else if (higher_is_better)  // BLEU ties (e.g. 0 early in training) are broken by perplexity
    out.better = score > *s_.best_score ||
                 (score == *s_.best_score && s_.best_perplexity && v.perplexity < *s_.best_perplexity);
  else
    out.better = score < *s_.best_score;
  if (!s_.best_bleu || v.bleu > *s_.best_bleu) s_.best_bleu = v.bleu;
  if (!s_.best_perplexity || v.perplexity < *s_.best_perplexity) s_.best_perplexity = v.perplexity;
  s_.last_valid_step = step;
  if (out.better) {
    s_.best_score = score;
    s_.bad_validations = 0;
  } else {
    ++s_.bad_validations;
    if (t_.lr_patience > 0 && s_.bad_validations % t_.lr_patience == 0 && lr > t_.min_lr)
      out.new_lr = std::max(t_.min_lr, lr * t_.lr_decay);
  }
  out.early_stop = t_.early_stop > 0 && s_.bad_validations >= t_.early_stop;
  return out;
}

std::string Schedule::budget_reached(int64_t step, int64_t epoch) const {
  if (t_.max_steps > 0 && step >= t_.max_steps) return "max_steps";
  if (t_.max_minutes > 0 && s_.elapsed_s >= t_.max_minutes * 60) return "max_minutes";
  if (t_.max_epochs > 0 && epoch >= t_.max_epochs) return "max_epochs";
  return "";
}

double Schedule::seconds_left(int64_t step, int64_t epoch, int64_t data_position, int64_t per_epoch,
                              double step_s) const {
  double left = INFINITY;
  if (t_.max_steps > 0) left = std::min(left, double(t_.max_steps - step) * step_s);
  if (t_.max_epochs > 0) left = std::min(left, double((t_.max_epochs - epoch) * per_epoch - data_position) * step_s);
  if (t_.max_minutes > 0) left = std::min(left, t_.max_minutes * 60 - s_.elapsed_s);
  return left;
}

}  // namespace attn::train
