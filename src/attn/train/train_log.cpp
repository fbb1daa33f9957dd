#include "attn/train/train_log.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace attn::train {

const char* nonfinite_name(double value) { return std::isnan(value) ? "nan" : value > 0 ? "inf" : "-inf"; }

std::string hms(double s) {
  if (!(s >= 0) || !std::isfinite(s)) return "?";
  const int64_t t = int64_t(s + 0.5);
  char buf[32];
  if (t >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", (long long)(t / 3600), (long long)(t % 3600 / 60));
  else
    std::snprintf(buf, sizeof buf, "%lldm%02llds", (long long)(t / 60), (long long)(t % 60));
  return buf;
}

TrainLog::TrainLog(const std::string& out_dir, bool resume, PrintFn print)
    : path_(out_dir + "/log.jsonl"),
      out_(path_, resume ? std::ios::app : std::ios::trunc),
      print_(print ? std::move(print) : [](const std::string& s) {
        std::printf("%s\n", s.c_str());
        std::fflush(stdout);
      }) {
  if (!out_) throw std::runtime_error(path_ + ": cannot open for writing");
}

TrainLog::TrainLog() : print_([](const std::string&) {}) {}

void TrainLog::append(const std::string& json_line) {
  if (path_.empty()) return;  // a silent log
  errno = 0;
  out_ << json_line << "\n" << std::flush;
  if (!out_) throw std::runtime_error(path_ + ": write failed" + (errno ? std::string(": ") + std::strerror(errno) : ""));
}

void TrainLog::progress(const ProgressRecord& r) {
  char buf[300];
  std::snprintf(buf, sizeof buf, "step %6lld | epoch %lld %3.0f%% | loss %.4f | %6.0f tgt tok/s | lr %.2e | %s | ETA %s",
                (long long)r.step, (long long)r.epoch + 1, 100.0 * r.epoch_progress, r.loss, r.tgt_tokens_per_s, r.lr,
                hms(r.elapsed_s).c_str(), hms(r.seconds_left).c_str());
  print_(buf);
  const nlohmann::ordered_json j = {{"type", "train"},          {"step", r.step},
                                    {"epoch", r.epoch},         {"epoch_progress", r.epoch_progress},
                                    {"loss", r.loss},           {"tgt_tokens_per_s", r.tgt_tokens_per_s},
                                    {"lr", r.lr},               {"elapsed_s", r.elapsed_s}};
  append(j.dump());
}

void TrainLog::validation(const ValidationRecord& r) {
  const Validation& v = r.figures;
  char exact[48] = "";
  if (v.exact_match) std::snprintf(exact, sizeof exact, " | exact %.1f%%", *v.exact_match);
  char buf[340];
  std::snprintf(buf, sizeof buf, "valid step %lld | epoch %lld | ppl %.3f | BLEU %.2f (%lld sentences, %s)%s | %.1fs | %s",
                (long long)r.step, (long long)r.epoch + 1, v.perplexity, v.bleu, (long long)v.sentences,
                r.beam > 1 ? ("beam " + std::to_string(r.beam)).c_str() : "greedy", exact, v.seconds, r.note.c_str());
  print_(buf);
  nlohmann::ordered_json j = {{"type", "valid"},       {"step", r.step},       {"epoch", r.epoch},
                              {"perplexity", v.perplexity}, {"bleu", v.bleu},   {"best", r.best},
                              {"lr", r.lr},            {"valid_seconds", v.seconds}, {"elapsed_s", r.elapsed_s},
                              {"wall_s", r.wall_s}};
  if (v.exact_match) j["exact_match"] = *v.exact_match;
  append(j.dump());
}

void TrainLog::skipped(int64_t step, int64_t epoch, const std::string& what, double value) {
  const nlohmann::ordered_json j = {
      {"type", "skipped"}, {"step", step}, {"epoch", epoch}, {"nonfinite", what}, {"value", nonfinite_name(value)}};
  append(j.dump());
}

void TrainLog::finished(const FinishedRecord& r, bool completed) {
  char best[96] = "no validation yet";
  if (r.best_bleu)
    std::snprintf(best, sizeof best, "best BLEU %.2f, best ppl %.3f", *r.best_bleu, r.best_perplexity.value_or(0));
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s after %lld steps (%s of training): %s; this run %.0f tgt tok/s over %s",
                completed ? ("finished: " + r.reason).c_str() : "interrupted, checkpoint saved", (long long)r.step,
                hms(r.elapsed_s).c_str(), best, r.run_tokens_per_s, hms(r.run_seconds).c_str());
  print_(buf);
  if (!completed) return;
  nlohmann::ordered_json j = {{"type", "finished"},    {"reason", r.reason},       {"step", r.step},
                              {"epoch", r.epoch},      {"elapsed_s", r.elapsed_s}, {"wall_s", r.wall_s}};
  if (r.best_bleu) j["best_bleu"] = *r.best_bleu;
  append(j.dump());
}

}  // namespace attn::train
