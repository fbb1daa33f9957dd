// The translation trainer's features end to end on the toy task: an
// interrupted and resumed run equals the uninterrupted one bit for bit for
// every model kind (including a kind of the tests' own whose
// MultiHeadAttention draws dropout from its own random stream), also in the
// middle of a plateau; snapshots; the time budget.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "attn/autograd/ops.h"
#include "attn/data/line_reader.h"
#include "attn/models/rnnsearch/rnnsearch.h"
#include "attn/nn/multihead.h"
#include "attn/train/mt_trainer.h"
#include "caption_run.h"
#include "toy_run.h"
#include "train_test_util.h"

namespace attn::testing::trainer_test {
namespace {

// rnnsearch whose initial decoder state also attends over the annotations
// through MultiHeadAttention with attention dropout: s0 += MHA(s0, h, h).
// Needs decoder_hidden == 2 * encoder_hidden.
class RnnSearchWithMha : public models::RnnSearch {
public:
  RnnSearchWithMha(const models::ModelConfig& c, Rng& init, uint64_t dropout_seed) : RnnSearch(c, init, dropout_seed) {
    mha_ = register_module("init_attention", std::make_shared<nn::MultiHeadAttention>(
                                                 nn::MultiHeadAttentionOptions(c.section<models::RnnSearchConfig>().decoder_hidden, 4).set_dropout(0.3f), init));
  }
  models::Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override {
    models::Encoded e = RnnSearch::encode(src, lengths);
    const Tensor s0 = e.state.live("s");  // [B, Hd]
    const int64_t B = s0.size(0), Hd = s0.size(1);
    attention::Mask mask;
    mask.key_lengths = e.memory.lengths();
    Tensor ctx = mha_->forward(reshape(s0, {B, 1, Hd}), e.memory.values(), e.memory.values(), mask).context;
    e.state.set("s", s0 + reshape(ctx, {B, Hd}));
    return e;
  }

private:
  std::shared_ptr<nn::MultiHeadAttention> mha_;
};

train::ModelFactory mha_factory() {
  return [](const models::ModelConfig& c, Rng& init, uint64_t seed) -> std::unique_ptr<models::Seq2SeqModel> {
    return std::make_unique<RnnSearchWithMha>(c, init, seed);
  };
}

struct Kind {
  const char* name;
  std::string model;       // the config's model section
  bool mha = false;        // the tests' own kind (RunOptions::make_model)
  bool captions = false;   // a captioner: trained on generated scenes (caption_run.h)
};
// gtest prints a parameter through PrintTo: the kind's name, not its bytes.
void PrintTo(const Kind& k, std::ostream* os) { *os << k.name; }

std::vector<Kind> kinds() {
  const std::string luong = "  type: luong\n  embed: 32\n  encoder_hidden: 32\n  decoder_hidden: 64\n  attention: 32\n";
  return {
      {"rnnsearch", std::string(kToyRnnSearch) + "  dropout: 0.2\n  encoder_layers: 2\n"},
      {"luong_lstm_general", luong + "  cell: lstm\n  score: general\n  dropout: 0.2\n  decoder_layers: 2\n"},
      {"luong_gru_local_p", luong + "  cell: gru\n  score: general\n  window: local-p\n  window_half_width: 2\n  dropout: 0.2\n"},
      {"luong_lstm_concat", luong + "  cell: lstm\n  score: concat\n  encoder_layers: 2\n  dropout: 0.2\n"},
      {"rnnsearch_with_mha_dropout", std::string(kToyRnnSearch) + "  dropout: 0.2\n", true},
      {"transformer", "  type: transformer\n  embed: 32\n  heads: 4\n  feed_forward: 48\n  encoder_layers: 2\n"
                      "  decoder_layers: 2\n  max_positions: 64\n  dropout: 0.2\n  attention_dropout: 0.1\n"},
      {"show_attend_tell_soft", toy_captioner("soft") + "  dropout: 0.2\n", false, true},
      {"show_attend_tell_hard", toy_captioner("hard") + "  dropout: 0.2\n", false, true},
      {"show_attend_tell_none", toy_captioner("none") + "  dropout: 0.2\n", false, true},
  };
}

train::RunOptions quiet(const Kind& k) {
  train::RunOptions r;
  r.print = [](const std::string&) {};
  if (k.mha) r.make_model = mha_factory();
  return r;
}

struct Corpus {
  Corpus() : dir("trainer") {
    write_toy(dir.path, "train", 400, 1);
    write_toy(dir.path, "valid", 30, 2);
  }
  TempDir dir;
};

// Corpus plus 40 generated scenes (32 training images of 4 captions each, 4 validation images).
struct CorpusWithScenes : Corpus {
  CorpusWithScenes() : scenes(write_scenes(dir.path + "/scenes", 40, 3)) {}
  std::string scenes;
};

// Weights, optimizer state and best model of two run directories are equal bit for bit.
void expect_same_run(const std::string& a, const std::string& b) {
  EXPECT_TRUE(same_tensors(a + "/checkpoint/model.safetensors", b + "/checkpoint/model.safetensors"));
  EXPECT_TRUE(same_tensors(a + "/checkpoint/optimizer.safetensors", b + "/checkpoint/optimizer.safetensors"));
  EXPECT_TRUE(same_tensors(a + "/model.safetensors", b + "/model.safetensors"));
}

class EveryKind : public ::testing::TestWithParam<Kind> {};

// Stopped at step 7 and at step 15 (past the validation at 8), resumed to the
// end: the same parameters, optimizer state and best model as not stopping.
TEST_P(EveryKind, ResumeEqualsUninterrupted) {
  const Kind& k = GetParam();
  CorpusWithScenes c;
  const std::string opts = "  max_steps: 24\n  max_epochs: 0\n  valid_every: 8\n  log_every: 5\n  threads: 2\n";
  auto config = [&](const std::string& out) {
    return train::parse_train_config(k.captions ? caption_config(c.scenes, out, opts, k.model)
                                                : toy_config(c.dir.path, out, opts, "", k.model));
  };
  const std::string a = c.dir.path + "/a", b = c.dir.path + "/b";
  train::TrainSummary sa = train::train_translation(config(a), quiet(k));
  ASSERT_EQ(sa.steps, 24);
  train::RunOptions stop = quiet(k);
  stop.stop_after_steps = 7;
  EXPECT_FALSE(train::train_translation(config(b), stop).completed);
  stop.resume = true;
  stop.stop_after_steps = 8;
  EXPECT_EQ(train::train_translation(config(b), stop).steps, 15);
  train::RunOptions resume = quiet(k);
  resume.resume = true;
  EXPECT_EQ(train::train_translation(config(b), resume).steps, 24);
  expect_same_run(a, b);
  if (k.mha) {  // the MultiHeadAttention's own stream is in the checkpoint
    const auto j = nlohmann::json::parse(read_bytes(a + "/checkpoint/trainer_state.json"));
    EXPECT_TRUE(j.at("module_rngs").contains("init_attention.dropout_rng")) << j.at("module_rngs").dump();
  }
  if (k.captions) {  // the hard attention's stream and REINFORCE baseline are in the checkpoint
    const auto j = nlohmann::json::parse(read_bytes(a + "/checkpoint/trainer_state.json"));
    EXPECT_TRUE(j.at("module_rngs").contains("attention_rng")) << j.at("module_rngs").dump();
    EXPECT_EQ(j.at("module_buffers").at("reinforce_baseline").size(), 2u) << j.dump();
  }
}

INSTANTIATE_TEST_SUITE_P(Trainer, EveryKind, ::testing::ValuesIn(kinds()),
                         [](const ::testing::TestParamInfo<Kind>& i) { return std::string(i.param.name); });

// The validation records of a run's log.jsonl.
std::vector<nlohmann::json> validations(const std::string& run) {
  std::vector<nlohmann::json> v;
  for (const auto& line : data::read_lines(run + "/log.jsonl")) {
    auto j = nlohmann::json::parse(line);
    if (j["type"] == "valid") v.push_back(j);
  }
  return v;
}

// A run interrupted right after a validation without improvement (its
// learning rate just decayed) resumes into the same plateau: it decays and
// stops early at the same step, with the same weights, as the run that went on.
TEST(Trainer, ResumeInAPlateauStopsWhereTheUninterruptedRunStops) {
  Corpus c;
  const std::string opts =
      "  max_steps: 400\n  max_epochs: 0\n  valid_every: 3\n  log_every: 50\n  threads: 2\n  metric: perplexity\n"
      "  lr_decay: 0.5\n  early_stop: 3\n";
  auto config = [&](const std::string& out) {
    // lr 0.05: noisy steps, so the perplexity stalls early
    return train::parse_train_config(toy_config(c.dir.path, out, opts, "  dropout: 0.3\n"),
                                     {"train.lr=0.05", "train.lr_patience=1"});  // toy_config has lr_patience 2
  };
  const Kind k{"rnnsearch", kToyRnnSearch};
  const std::string a = c.dir.path + "/a", b = c.dir.path + "/b";
  train::TrainSummary sa = train::train_translation(config(a), quiet(k));
  ASSERT_EQ(sa.stop_reason, "early_stop");
  // the first validation of the final plateau (the early_stop bad validations in a row that end the run)
  const auto v = validations(a);
  size_t first_bad = v.size();
  while (first_bad > 0 && !v[first_bad - 1]["best"].get<bool>()) --first_bad;
  ASSERT_EQ(v.size() - first_bad, 3u) << "the run ends with early_stop = 3 validations without improvement";
  const int64_t plateau_step = v[first_bad]["step"].get<int64_t>();

  train::RunOptions stop = quiet(k);
  stop.stop_after_steps = plateau_step + 1;
  ASSERT_FALSE(train::train_translation(config(b), stop).completed);
  const auto state = nlohmann::json::parse(read_bytes(b + "/checkpoint/trainer_state.json"));
  ASSERT_GE(state["extra"]["bad_validations"].get<int64_t>(), 1) << "interrupted inside the plateau";
  train::RunOptions resume = quiet(k);
  resume.resume = true;
  train::TrainSummary sb = train::train_translation(config(b), resume);
  EXPECT_EQ(sb.stop_reason, "early_stop");
  EXPECT_EQ(sb.steps, sa.steps);
  expect_same_run(a, b);
  const auto vb = validations(b);
  EXPECT_EQ(vb.back()["lr"], v.back()["lr"]) << "the learning rate decayed the same times";
}

// snapshots: true keeps each validation's model, better or not, as
// snapshots/step-N.safetensors.
TEST(Trainer, SnapshotsKeepEveryValidationsModel) {
  Corpus c;
  const std::string out = c.dir.path + "/run";
  const std::string opts = "  max_steps: 40\n  max_epochs: 0\n  valid_every: 3\n  threads: 1\n  snapshots: true\n"
                           "  metric: perplexity\n  early_stop: 0\n";
  const Kind k{"rnnsearch", kToyRnnSearch};
  // lr 0.05: noisy steps, so some validations are not better
  train::train_translation(train::parse_train_config(toy_config(c.dir.path, out, opts), {"train.lr=0.05"}), quiet(k));
  std::vector<std::string> names, expected;
  for (const auto& e : std::filesystem::directory_iterator(out + "/snapshots"))
    if (e.path().extension() == ".safetensors") names.push_back(e.path().filename());  // beside config.json
  std::sort(names.begin(), names.end());
  bool some_not_better = false;
  for (const auto& v : validations(out)) {  // every 3 steps, and the one a completed run ends with at 40
    char name[64];
    std::snprintf(name, sizeof name, "step-%07lld.safetensors", (long long)v["step"].get<int64_t>());
    expected.push_back(name);
    some_not_better = some_not_better || !v["best"].get<bool>();
  }
  ASSERT_TRUE(some_not_better) << "the test needs a validation without improvement";
  ASSERT_EQ(expected.size(), 14u);
  EXPECT_EQ(names, expected);
  EXPECT_TRUE(same_tensors(out + "/snapshots/step-0000040.safetensors", out + "/checkpoint/model.safetensors"));
  EXPECT_FALSE(same_tensors(out + "/snapshots/step-0000003.safetensors", out + "/snapshots/step-0000006.safetensors"));
}

// max_minutes stops a run by its training time, which a resume carries on:
// a resumed run whose budget is spent takes no step.
TEST(Trainer, TimeBudgetStopsAndSurvivesResume) {
  Corpus c;
  const std::string out = c.dir.path + "/run";
  const std::string opts = "  max_steps: 2000\n  max_epochs: 0\n  valid_every: 0\n  threads: 1\n  max_minutes: 0.002\n";
  const Kind k{"rnnsearch", kToyRnnSearch};
  auto cfg = train::parse_train_config(toy_config(c.dir.path, out, opts));
  train::TrainSummary s = train::train_translation(cfg, quiet(k));
  EXPECT_EQ(s.stop_reason, "max_minutes");
  EXPECT_GE(s.steps, 1);
  EXPECT_LT(s.steps, 2000);
  EXPECT_GE(s.train_seconds, 0.12);
  train::RunOptions resume = quiet(k);
  resume.resume = true;
  train::TrainSummary r = train::train_translation(cfg, resume);
  EXPECT_EQ(r.stop_reason, "max_minutes");
  EXPECT_EQ(r.steps, s.steps);
}

// RunOptions::after_backward sees every parameter's gradient once per step,
// before clipping and the update: a hook that zeroes them leaves the model
// where make_model built it (Adam's step of a zero gradient is zero).
TEST(Trainer, AfterBackwardRunsBetweenBackwardAndTheUpdate) {
  Corpus c;
  const std::string out = c.dir.path + "/run";
  const std::string opts = "  max_steps: 6\n  max_epochs: 0\n  valid_every: 0\n  threads: 1\n";
  const Kind k{"rnnsearch", kToyRnnSearch};
  train::RunOptions run = quiet(k);
  nn::NamedTensors initial;
  run.make_model = [&](const models::ModelConfig& mc, Rng& init, uint64_t seed) {
    auto m = models::make_model(mc, init, seed);
    for (const auto& [name, p] : m->named_parameters()) initial.emplace_back(name, p.detach().clone());
    return m;
  };
  int64_t calls = 0;
  run.after_backward = [&](const nn::NamedTensors& params) {
    ++calls;
    ASSERT_EQ(params.size(), initial.size());
    for (const auto& [name, p] : params) {
      ASSERT_TRUE(p.grad().defined()) << name;
      p.grad().fill_(0.0f);
    }
  };
  train::TrainSummary s = train::train_translation(train::parse_train_config(toy_config(c.dir.path, out, opts)), run);
  EXPECT_EQ(s.steps, 6);
  EXPECT_EQ(calls, 6);
  const SafetensorsFile saved = load_safetensors(out + "/checkpoint/model.safetensors");
  ASSERT_EQ(saved.tensors.size(), initial.size());
  for (size_t i = 0; i < initial.size(); ++i)
    EXPECT_TRUE(bit_equal(saved.tensors[i].second, initial[i].second)) << initial[i].first << " moved";
}

}  // namespace
}  // namespace attn::testing::trainer_test
