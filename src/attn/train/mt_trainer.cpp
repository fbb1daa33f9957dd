#include "attn/train/mt_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/autograd/node.h"
#include "attn/data/batcher.h"
#include "attn/data/encoded_corpus.h"
#include "attn/data/line_reader.h"
#include "attn/decode/translator.h"
#include "attn/eval/bleu.h"
#include "attn/models/seq2seq.h"
#include "attn/tensor/threading.h"
#include "attn/train/checkpoint.h"
#include "attn/train/clip_grad.h"
#include "attn/train/corpora.h"
#include "attn/train/optim.h"
#include "attn/train/seed.h"

namespace attn::train {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

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

void copy_file(const std::string& from, const std::string& to) {
  if (fs::exists(to) && fs::equivalent(from, to)) return;
  std::error_code ec;
  fs::copy_file(from, to, fs::copy_options::overwrite_existing, ec);
  if (ec) throw std::runtime_error("cannot copy " + from + " to " + to + ": " + ec.message());
}

// The run's vocabularies as out/vocab.src.model and out/vocab.tgt.model.
void prepare_vocabs(const VocabConfig& v, const Corpora& c, const std::string& out, bool resume,
                    const std::function<void(const std::string&)>& print) {
  const std::string src_path = out + "/vocab.src.model", tgt_path = out + "/vocab.tgt.model";
  if (resume) {
    if (!fs::exists(src_path) || !fs::exists(tgt_path))
      throw std::runtime_error(out + ": cannot resume, vocabularies vocab.src.model / vocab.tgt.model missing");
    return;
  }
  if (!v.src_model.empty()) {
    copy_file(v.src_model, src_path);
    copy_file(v.joint ? v.src_model : v.tgt_model, tgt_path);
    return;
  }
  data::VocabTrainOptions o;
  o.vocab_size = v.size;
  o.model = v.type == "bpe" ? data::SubwordModel::kBpe : data::SubwordModel::kUnigram;
  o.character_coverage = v.character_coverage;
  o.num_threads = 1;  // SentencePiece's result depends on its thread count: keep runs repeatable
  auto t0 = Clock::now();
  if (v.joint) {
    data::SubwordVocab::train({&c.train.src, &c.train.tgt}, src_path, o);
    copy_file(src_path, tgt_path);
  } else {
    data::SubwordVocab::train({&c.train.src}, src_path, o);
    data::SubwordVocab::train({&c.train.tgt}, tgt_path, o);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "trained %s SentencePiece %s vocabulary of %d pieces in %.1fs", v.type.c_str(),
                v.joint ? "joint" : "separate", v.size, seconds_since(t0));
  print(buf);
}

// Trainer state beyond TrainerState's fields (checkpointed as its extra JSON).
struct Extra {
  int64_t bad_validations = 0;       // validations in a row without improvement
  int64_t last_valid_step = -1;      // step of the last validation
  double elapsed_s = 0;              // training time so far (all invocations, validation excluded)
  std::optional<double> best_bleu, best_ppl;
  std::string to_json() const {
    nlohmann::json j;
    j["bad_validations"] = bad_validations;
    j["last_valid_step"] = last_valid_step;
    j["elapsed_s"] = elapsed_s;
    j["best_bleu"] = best_bleu ? nlohmann::json(*best_bleu) : nlohmann::json(nullptr);
    j["best_perplexity"] = best_ppl ? nlohmann::json(*best_ppl) : nlohmann::json(nullptr);
    return j.dump();
  }
  static Extra from_json(const std::string& s) {
    nlohmann::json j = nlohmann::json::parse(s);
    Extra e;
    e.bad_validations = j.value("bad_validations", int64_t(0));
    e.last_valid_step = j.value("last_valid_step", int64_t(-1));
    e.elapsed_s = j.value("elapsed_s", 0.0);
    if (j.contains("best_bleu") && !j["best_bleu"].is_null()) e.best_bleu = j["best_bleu"].get<double>();
    if (j.contains("best_perplexity") && !j["best_perplexity"].is_null()) e.best_ppl = j["best_perplexity"].get<double>();
    return e;
  }
};

struct Validation {
  double perplexity = 0, bleu = 0, seconds = 0;
  int64_t sentences = 0;
};

class Validator {
public:
  Validator(const data::ParallelCorpus& valid, const data::SubwordVocab& sv, const data::SubwordVocab& tv,
            const TrainOptions& t)
      : sv_(sv), tv_(tv), t_(t) {
    data::EncodedCorpus enc = data::encode_corpus(valid, sv, tv);
    data::LengthFilter f;
    f.max_src_tokens = f.max_tgt_tokens = int64_t(1) << 30;
    f.max_ratio = 0;
    enc_ = data::filter_by_length(enc, f);
    data::BatchOptions bo;
    bo.shuffle = false;
    bo.max_tokens = t.max_tokens;
    for (int64_t i = 0; i < enc_.size(); ++i)
      bo.max_tokens = std::max<int64_t>(bo.max_tokens, int64_t(std::max(enc_.src[size_t(i)].size(), enc_.tgt[size_t(i)].size() + 1)));
    batcher_ = std::make_unique<data::Batcher>(enc_, bo);
    plan_ = batcher_->plan_epoch(0);
    const int64_t n = t.valid_bleu_sentences > 0 ? std::min<int64_t>(t.valid_bleu_sentences, valid.size()) : valid.size();
    src_.assign(valid.src.begin(), valid.src.begin() + n);
    ref_.assign(valid.tgt.begin(), valid.tgt.begin() + n);
  }

  Validation run(models::Seq2SeqModel& model) const {
    auto t0 = Clock::now();
    model.train(false);
    Validation v;
    {
      NoGradGuard ng;
      double nll = 0;
      int64_t tokens = 0;
      for (const auto& idx : plan_) {
        data::Seq2SeqBatch b = batcher_->make_batch(idx);
        int64_t n = 0;
        for (const auto& t : b.targets) n += int64_t(t.size()) + 1;
        nll += double(model.loss(b).item()) * double(n);
        tokens += n;
      }
      v.perplexity = std::exp(nll / double(std::max<int64_t>(tokens, 1)));
      decode::TranslateOptions o;
      o.search.beam = t_.valid_beam;
      o.search.alignments = false;
      o.batch_sentences = t_.valid_batch_sentences;
      std::vector<decode::Translation> tr = decode::translate_lines(model, sv_, tv_, src_, o);
      std::vector<std::string> hyps;
      for (const auto& x : tr) hyps.push_back(x.hypotheses.empty() ? "" : x.hypotheses[0].text);
      v.bleu = eval::corpus_bleu(hyps, {ref_}).score;
      v.sentences = int64_t(hyps.size());
    }
    model.train(true);
    v.seconds = seconds_since(t0);
    return v;
  }

private:
  const data::SubwordVocab &sv_, &tv_;
  TrainOptions t_;
  data::EncodedCorpus enc_;
  std::unique_ptr<data::Batcher> batcher_;
  std::vector<std::vector<int64_t>> plan_;
  std::vector<std::string> src_, ref_;
};

}  // namespace

TrainSummary train_translation(const TrainConfig& cfg_in, const RunOptions& run) {
  TrainConfig cfg = cfg_in;
  const TrainOptions& t = cfg.train;
  auto print = run.print ? run.print : [](const std::string& s) {
    std::printf("%s\n", s.c_str());
    std::fflush(stdout);
  };
  const std::string out = t.out_dir, ckpt_dir = out + "/checkpoint";
  if (run.resume && !fs::exists(ckpt_dir + "/trainer_state.json"))
    throw std::runtime_error(out + ": nothing to resume (no checkpoint/trainer_state.json)");
  if (!run.resume && fs::exists(ckpt_dir + "/trainer_state.json"))
    throw std::runtime_error(out + ": holds a checkpoint already; pass --resume to continue it, or use another out_dir");
  fs::create_directories(out);
  set_num_threads(t.threads);
  const auto run_t0 = Clock::now();  // wall time of this invocation (vocabularies, validation included)

  // ---- data and vocabularies ----
  Corpora corp = read_corpora(cfg.data);
  prepare_vocabs(cfg.vocab, corp, out, run.resume, print);
  data::SubwordVocab sv = data::SubwordVocab::load(out + "/vocab.src.model");
  data::SubwordVocab tv = data::SubwordVocab::load(out + "/vocab.tgt.model");
  if (corp.test.size() > 0) {
    data::write_lines(out + "/test.src", corp.test.src);
    data::write_lines(out + "/test.ref", corp.test.tgt);
  }
  data::FilterReport report;
  data::LengthFilter lf;
  lf.max_src_tokens = cfg.data.max_src_tokens;
  lf.max_tgt_tokens = cfg.data.max_tgt_tokens;
  lf.max_ratio = cfg.data.max_ratio;
  data::EncodedCorpus train_enc = data::filter_by_length(data::encode_corpus(corp.train, sv, tv), lf, &report);
  if (train_enc.size() == 0) throw std::invalid_argument("data: no training pair passes the length filter");
  data::BatchOptions bo;
  bo.max_tokens = t.max_tokens;
  bo.max_sentences = t.max_sentences;
  bo.seed = derive_seed(t.seed, "data");
  data::Batcher batcher(train_enc, bo);
  Validator validator(corp.valid, sv, tv, t);

  // ---- model and optimizer ----
  cfg.model.src_vocab = sv.size();
  cfg.model.tgt_vocab = tv.size();
  models::validate(cfg.model);
  const std::string model_json = models::to_json(cfg.model);
  Rng init = make_rng(t.seed, "init");
  std::unique_ptr<models::Seq2SeqModel> model = models::make_model(cfg.model, init, derive_seed(t.seed, "dropout"));
  model->train(true);
  AdamOptions ao;
  ao.lr = t.lr;
  ao.beta2 = t.beta2;
  ao.weight_decay = t.weight_decay;
  Adam adam(model->named_parameters(), ao);

  TrainerState state;
  Extra extra;
  if (run.resume) {
    LoadedCheckpoint lc = load_checkpoint(ckpt_dir, {model.get(), &adam});
    if (lc.config_json != model_json)
      throw std::runtime_error(ckpt_dir + ": the checkpoint's model config " + lc.config_json +
                               " differs from this config's " + model_json);
    state = lc.trainer;
    extra = Extra::from_json(state.extra_json);
    model->dropout_rng().set_state(state.rng_state);
  } else {
    std::ofstream(out + "/train_config.json") << to_json(cfg) << "\n";
    std::ofstream(out + "/log.jsonl", std::ios::trunc);
  }
  std::ofstream log(out + "/log.jsonl", std::ios::app);

  {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%s %s: %lld parameters | vocab %d/%d | train %lld pairs (%lld dropped: %lld empty, %lld long, %lld "
                  "ratio) | valid %lld | %d threads%s",
                  run.resume ? "resuming" : "training", models::name(cfg.model.type),
                  (long long)model->num_parameters(), sv.size(), tv.size(), (long long)train_enc.size(),
                  (long long)(report.empty + report.too_long + report.bad_ratio), (long long)report.empty,
                  (long long)report.too_long, (long long)report.bad_ratio, (long long)corp.valid.size(), num_threads(),
                  run.resume ? (" at step " + std::to_string(state.step)).c_str() : "");
    print(buf);
  }

  const bool higher_is_better = t.metric == "bleu";
  auto save_ckpt = [&]() {
    state.rng_state = model->dropout_rng().state();
    state.extra_json = extra.to_json();
    CheckpointSave cs;
    cs.model = model.get();
    cs.config_json = model_json;
    cs.optimizer = &adam;
    cs.trainer = state;
    save_checkpoint(ckpt_dir, cs);
  };
  TrainSummary sum;
  auto validate_now = [&]() -> bool {  // returns true when early stopping triggers
    Validation v = validator.run(*model);
    const double score = higher_is_better ? v.bleu : v.perplexity;
    // BLEU ties (e.g. 0 early in training) are broken by perplexity
    const bool better = !state.best_valid_score ||
                        (higher_is_better ? score > *state.best_valid_score ||
                                                (score == *state.best_valid_score && extra.best_ppl &&
                                                 v.perplexity < *extra.best_ppl)
                                          : score < *state.best_valid_score);
    if (!extra.best_bleu || v.bleu > *extra.best_bleu) extra.best_bleu = v.bleu;
    if (!extra.best_ppl || v.perplexity < *extra.best_ppl) extra.best_ppl = v.perplexity;
    extra.last_valid_step = state.step;
    sum.last_bleu = v.bleu;
    std::string note;
    if (better) {
      state.best_valid_score = score;
      extra.bad_validations = 0;
      save_model(out + "/model.safetensors", *model, model_json);
      note = "new best, saved";
    } else {
      ++extra.bad_validations;
      note = std::to_string(extra.bad_validations) + " without improvement";
      if (t.lr_patience > 0 && extra.bad_validations % t.lr_patience == 0 && adam.lr() > t.min_lr) {
        adam.set_lr(std::max(t.min_lr, adam.lr() * t.lr_decay));
        char b[64];
        std::snprintf(b, sizeof b, ", lr -> %.2e", adam.lr());
        note += b;
      }
    }
    if (t.snapshots) {
      char name[64];
      std::snprintf(name, sizeof name, "/snapshots/step-%07lld.safetensors", (long long)state.step);
      fs::create_directories(out + "/snapshots");
      save_model(out + name, *model, model_json);
    }
    char buf[300];
    std::snprintf(buf, sizeof buf, "valid step %lld | epoch %lld | ppl %.3f | BLEU %.2f (%lld sentences, %s) | %.1fs | %s",
                  (long long)state.step, (long long)state.epoch + 1, v.perplexity, v.bleu, (long long)v.sentences,
                  t.valid_beam > 1 ? ("beam " + std::to_string(t.valid_beam)).c_str() : "greedy", v.seconds,
                  note.c_str());
    print(buf);
    nlohmann::ordered_json j = {{"type", "valid"},       {"step", state.step},     {"epoch", state.epoch},
                                {"perplexity", v.perplexity}, {"bleu", v.bleu},     {"best", better},
                                {"lr", adam.lr()},       {"valid_seconds", v.seconds}, {"elapsed_s", extra.elapsed_s},
                                {"wall_s", seconds_since(run_t0)}};
    log << j.dump() << "\n" << std::flush;
    return t.early_stop > 0 && extra.bad_validations >= t.early_stop;
  };

  // ---- the loop ----
  models::LossOptions lo;
  lo.label_smoothing = float(t.label_smoothing);
  const int64_t start_step = state.step;
  double window_loss = 0, window_tokens = 0, window_s = 0, run_tokens = 0, run_s = 0;
  int64_t window_steps = 0;
  std::vector<std::vector<int64_t>> plan = batcher.plan_epoch(uint64_t(state.epoch));
  const int64_t per_epoch = int64_t(plan.size());
  if (state.data_position >= per_epoch) {  // the checkpoint was taken after an epoch's last batch
    ++state.epoch;
    state.data_position = 0;
    plan = batcher.plan_epoch(uint64_t(state.epoch));
  }
  std::string reason;
  while (reason.empty()) {
    // limits reached already (a resumed run that had finished)
    if (t.max_epochs > 0 && state.epoch >= t.max_epochs) reason = "max_epochs";
    if (t.max_steps > 0 && state.step >= t.max_steps) reason = "max_steps";
    if (t.max_minutes > 0 && extra.elapsed_s >= t.max_minutes * 60) reason = "max_minutes";
    if (!reason.empty()) break;
    auto t0 = Clock::now();
    data::Seq2SeqBatch b = batcher.make_batch(plan[size_t(state.data_position)]);
    int64_t ntok = 0;
    for (const auto& tg : b.targets) ntok += int64_t(tg.size()) + 1;
    adam.zero_grad();
    Tensor loss = model->loss(b, lo);
    backward(loss);
    if (t.clip > 0) clip_grad_norm(adam.params(), t.clip);
    adam.step();
    const double loss_v = loss.item();
    if (!std::isfinite(loss_v))
      throw std::runtime_error("training diverged: loss " + std::to_string(loss_v) + " at step " +
                               std::to_string(state.step + 1));
    ++state.step;
    ++state.data_position;
    const double dt = seconds_since(t0);
    extra.elapsed_s += dt;
    window_loss += loss_v * double(ntok);
    window_tokens += double(ntok);
    window_s += dt;
    run_tokens += double(ntok);
    run_s += dt;
    ++window_steps;

    if (state.step % t.log_every == 0) {
      // ETA from the window's step time towards the nearest limit
      const double step_s = window_s / double(window_steps);
      double remaining = INFINITY;
      if (t.max_steps > 0) remaining = std::min(remaining, double(t.max_steps - state.step) * step_s);
      if (t.max_epochs > 0)
        remaining = std::min(remaining, double((t.max_epochs - state.epoch) * per_epoch - state.data_position) * step_s);
      if (t.max_minutes > 0) remaining = std::min(remaining, t.max_minutes * 60 - extra.elapsed_s);
      char buf[300];
      std::snprintf(buf, sizeof buf,
                    "step %6lld | epoch %lld %3.0f%% | loss %.4f | %6.0f tgt tok/s | lr %.2e | %s | ETA %s",
                    (long long)state.step, (long long)state.epoch + 1,
                    100.0 * double(state.data_position) / double(per_epoch), window_loss / window_tokens,
                    window_tokens / window_s, adam.lr(), hms(extra.elapsed_s).c_str(), hms(remaining).c_str());
      print(buf);
      nlohmann::ordered_json j = {{"type", "train"},
                                  {"step", state.step},
                                  {"epoch", state.epoch},
                                  {"epoch_progress", double(state.data_position) / double(per_epoch)},
                                  {"loss", window_loss / window_tokens},
                                  {"tgt_tokens_per_s", window_tokens / window_s},
                                  {"lr", adam.lr()},
                                  {"elapsed_s", extra.elapsed_s}};
      log << j.dump() << "\n" << std::flush;
      window_loss = window_tokens = window_s = 0;
      window_steps = 0;
    }

    const bool epoch_end = state.data_position >= per_epoch;
    bool validated = false;
    if ((t.valid_every > 0 && state.step % t.valid_every == 0) || (t.valid_every == 0 && epoch_end)) {
      validated = true;
      if (validate_now()) reason = "early_stop";
    }
    if (epoch_end) {
      ++state.epoch;
      state.data_position = 0;
      if (t.max_epochs == 0 || state.epoch < t.max_epochs) plan = batcher.plan_epoch(uint64_t(state.epoch));
    }
    if (reason.empty() && t.max_steps > 0 && state.step >= t.max_steps) reason = "max_steps";
    if (reason.empty() && t.max_minutes > 0 && extra.elapsed_s >= t.max_minutes * 60) reason = "max_minutes";
    if (reason.empty() && t.max_epochs > 0 && state.epoch >= t.max_epochs) reason = "max_epochs";
    if (reason.empty() && ((run.stop_after_steps > 0 && state.step - start_step >= run.stop_after_steps) ||
                           (run.stop && run.stop->load()))) {
      reason = "interrupted";
      break;
    }
    if (validated) save_ckpt();
  }
  sum.completed = reason != "interrupted";
  // a completed run ends validated (so the best model reflects its last steps)
  if (sum.completed && extra.last_valid_step != state.step) validate_now();
  save_ckpt();
  sum.stop_reason = reason;
  sum.steps = state.step;
  sum.epoch = state.epoch;
  sum.best_bleu = extra.best_bleu;
  sum.best_perplexity = extra.best_ppl;
  sum.train_seconds = run_s;
  sum.tgt_tokens_per_s = run_s > 0 ? run_tokens / run_s : 0;
  char best[96] = "no validation yet";
  if (sum.best_bleu)
    std::snprintf(best, sizeof best, "best BLEU %.2f, best ppl %.3f", *sum.best_bleu, sum.best_perplexity.value_or(0));
  char buf[300];
  std::snprintf(buf, sizeof buf, "%s after %lld steps (%s of training): %s; this run %.0f tgt tok/s over %s",
                sum.completed ? ("finished: " + reason).c_str() : "interrupted, checkpoint saved", (long long)state.step,
                hms(extra.elapsed_s).c_str(), best, sum.tgt_tokens_per_s, hms(run_s).c_str());
  print(buf);
  if (sum.completed) {  // the last line of a finished run's log (scripts/quickstart.sh looks for it)
    nlohmann::ordered_json j = {{"type", "finished"},       {"reason", reason},
                                {"step", state.step},       {"epoch", state.epoch},
                                {"elapsed_s", extra.elapsed_s}, {"wall_s", seconds_since(run_t0)}};
    if (sum.best_bleu) j["best_bleu"] = *sum.best_bleu;
    log << j.dump() << "\n" << std::flush;
  }
  return sum;
}

}  // namespace attn::train
