// attn explain: the replay agrees with the search for every model kind, the
// attention internals are what the weights were computed from, --words merges
// by the documented rule, the seed tutorials' worked examples, bad input, and
// the command end to end on a tiny trained model.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>

#include "attn/attention/attention.h"
#include "attn/autograd/node.h"
#include "attn/data/line_reader.h"
#include "attn/decode/explain.h"
#include "attn/decode/explain_examples.h"
#include "attn/decode/search.h"
#include "attn/train/mt_trainer.h"
#include "attn/viz/heatmap.h"
#include "oracle.h"
#include "toy_run.h"
#include "tiny_models.h"
#include "train_test_util.h"

namespace attn::testing::explain_test {
namespace {

using json = nlohmann::json;
using models::LuongScore;
using models::LuongWindow;
using models::ModelConfig;

// type rnnsearch (score and window unused) or luong
ModelConfig small(const std::string& type, LuongScore score = LuongScore::General, LuongWindow window = LuongWindow::Global) {
  ModelConfig c = models::model_config(type);
  c.src_vocab = 17, c.tgt_vocab = 19;
  models::RnnConfig& r = rnn_of(c);
  c.embed = 8, r.encoder_hidden = 6, r.decoder_hidden = 12, r.attention = 5;  // luong dot: Hd = 2 He
  if (type == "rnnsearch") rnnsearch_of(c).readout = 8;
  c.dropout = 0.0;
  if (type == "luong") {
    luong_of(c).score = score;
    luong_of(c).window = window;
    luong_of(c).window_half_width = 2;  // windows narrower than the 9-piece source
    r.cell = models::CellType::Lstm;
  }
  return c;
}

// luong's window (global for rnnsearch) and its half width
LuongWindow window_of(const ModelConfig& c) { return c.type == "luong" ? luong_of(c).window : LuongWindow::Global; }
int64_t half_width_of(const ModelConfig& c) { return c.type == "luong" ? luong_of(c).window_half_width : 0; }

struct Kind {
  const char* name;
  ModelConfig config;
};
std::vector<Kind> kinds() {
  return {{"rnnsearch", small("rnnsearch")},
          {"luong dot", small("luong", LuongScore::Dot)},
          {"luong general", small("luong", LuongScore::General)},
          {"luong concat", small("luong", LuongScore::Concat)},
          {"luong local-m", small("luong", LuongScore::General, LuongWindow::LocalM)},
          {"luong local-p", small("luong", LuongScore::Dot, LuongWindow::LocalP)}};
}

const std::vector<int> kSource = {4, 9, 5, 16, 7, 12, 8, 6, 10};  // S = 9

// The replay's tokens and weights are the search's, greedy and beam, for
// every model kind; the weights are the softmax of the finite scores (times
// local-p's Gaussian), zero where the score is hidden, and the window is the
// documented range around p_t.
TEST(Explain, ReplayAgreesWithTheSearchAndTheScores) {
  for (const Kind& kind : kinds()) {
    for (int beam : {1, 3}) {
      SCOPED_TRACE(std::string(kind.name) + " beam " + std::to_string(beam));
      Rng init(5);
      auto model = models::make_model(kind.config, init, 1);
      model->train(false);
      decode::ExplainOptions o;
      o.beam = beam;
      o.top_k = 4;
      decode::Explanation e = decode::explain_ids(*model, kSource, o);

      const int64_t S = int64_t(kSource.size());
      Tensor src = Tensor::from(std::vector<float>(kSource.begin(), kSource.end()), {1, S});
      decode::SearchOptions so;
      so.beam = beam;
      const decode::Hypothesis h = decode::search(*model, src, {S}, so).at(0).hypotheses.at(0);
      ASSERT_EQ(e.tokens, h.tokens);
      ASSERT_EQ(e.finished, h.finished);
      ASSERT_EQ(e.steps.size(), h.tokens.size() + (h.finished ? 1 : 0));
      ASSERT_EQ(h.attention.size(), e.steps.size() * size_t(S));
      const ModelConfig& c = kind.config;
      for (size_t t = 0; t < e.steps.size(); ++t) {
        const decode::ExplainStep& s = e.steps[t];
        ASSERT_TRUE(s.query && s.scores && s.context_norm);  // every built-in kind gives these internals
        ASSERT_EQ(s.weights.size(), size_t(S));
        for (int64_t j = 0; j < S; ++j) EXPECT_NEAR(s.weights[size_t(j)], h.attention[t * size_t(S) + size_t(j)], 1e-5);
        // softmax over the visible scores
        float mx = -std::numeric_limits<float>::infinity();
        for (float x : (*s.scores)) mx = std::max(mx, x);
        double z = 0;
        for (float x : (*s.scores)) z += std::isfinite(x) ? std::exp(double(x - mx)) : 0.0;
        double total = 0;
        for (int64_t j = 0; j < S; ++j) {
          const float x = (*s.scores)[size_t(j)], w = s.weights[size_t(j)];
          total += w;
          if (!std::isfinite(x)) {
            EXPECT_EQ(w, 0.0f) << "hidden key " << j;
            continue;
          }
          double want = std::exp(double(x - mx)) / z;
          const double sigma = half_width_of(c) / 2.0;  // local-p's Gaussian
          if (s.position) want *= std::exp(-std::pow(double(j) - *s.position, 2) / (2 * sigma * sigma));
          EXPECT_NEAR(w, want, 1e-5) << "key " << j;
        }
        // 1 over the visible keys (0 when a local-m window has left the source); local-p's
        // Gaussian lowers the sum
        const bool any = std::isfinite(mx);
        if (window_of(c) != LuongWindow::LocalP) {
          EXPECT_NEAR(total, any ? 1.0 : 0.0, 1e-5);
        }
        // the window: [lo, hi) around p_t (local-m: p_t = t, 0-based), exactly the visible keys
        const bool local = window_of(c) != LuongWindow::Global;
        ASSERT_EQ(s.window.has_value(), local);
        ASSERT_EQ(s.position.has_value(), local && window_of(c) == LuongWindow::LocalP);
        if (local) {
          const double p = s.position ? *s.position : double(t);
          // Luong et al.'s window [p - D, p + D] within the source, from the definition
          int64_t lo = -1, hi = -1;
          for (int64_t j = 0; j < S; ++j) {
            const bool in = std::fabs(double(j) - p) <= double(half_width_of(c));
            EXPECT_EQ(std::isfinite((*s.scores)[size_t(j)]), in) << j;
            if (in && lo < 0) lo = j;
            if (in) hi = j + 1;
          }
          if (lo >= 0) {
            EXPECT_EQ(*s.window, std::make_pair(lo, hi));
          } else {  // the window has left the source: empty
            EXPECT_EQ(s.window->first, s.window->second);
          }
          if (s.position) {
            EXPECT_TRUE(*s.position > 0 && *s.position < double(S));
          }
        }
        // top-k: best first; the chosen token's probability
        ASSERT_EQ(s.top_k.size(), 4u);
        for (size_t k = 1; k < s.top_k.size(); ++k) EXPECT_GE(s.top_k[k - 1].second, s.top_k[k].second);
        const int want_tok = t < e.tokens.size() ? e.tokens[t] : c.specials.eos;
        EXPECT_EQ(s.chosen, want_tok);
        if (beam == 1) {
          EXPECT_EQ(s.top_k[0].first, s.chosen);
        }
        for (const auto& [tok, p] : s.top_k) {
          if (tok == s.chosen) {
            EXPECT_FLOAT_EQ(p, s.chosen_prob);
          }
        }
        EXPECT_EQ(int64_t(s.query->size()), rnn_of(c).decoder_hidden);
      }
    }
  }
}

// The query and context are the ones the scores and weights were computed
// from: rnnsearch's e_j = v^T tanh(W_a q + U h_j + b) and luong dot's
// e_j = q . h_j recomputed from the recorded query; |c| = |sum_j a_j h_j|.
TEST(Explain, QueryAndContextAreWhatTheScoresRead) {
  for (const Kind& kind : {kinds()[0], kinds()[1]}) {
    SCOPED_TRACE(kind.name);
    Rng init(6);
    auto model = models::make_model(kind.config, init, 1);
    model->train(false);
    decode::Explanation e = decode::explain_ids(*model, kSource, {});
    NoGradGuard no_grad;
    const int64_t S = int64_t(kSource.size());
    models::Encoded enc = model->encode(Tensor::from(std::vector<float>(kSource.begin(), kSource.end()), {1, S}), {S});
    const int64_t Dv = enc.memory.values().size(2), K = enc.memory.keys().size(2);
    Tensor Wa, v;
    for (auto& [name, p] : model->named_parameters()) {
      if (name == "attention.query.weight") Wa = p;
      if (name == "attention.v") v = p;
    }
    for (const decode::ExplainStep& s : e.steps) {
      ASSERT_TRUE(s.query && s.scores && s.context_norm);
      for (int64_t j = 0; j < S; ++j) {
        const float* key = enc.memory.keys().data() + j * K;
        double want = 0;
        if (kind.config.type == "rnnsearch") {
          for (int64_t a = 0; a < K; ++a) {
            double qa = 0;
            for (size_t d = 0; d < s.query->size(); ++d) qa += double(Wa.data()[a * int64_t(s.query->size()) + int64_t(d)]) * (*s.query)[d];
            want += double(v.data()[a]) * std::tanh(qa + double(key[a]));
          }
        } else {
          for (int64_t d = 0; d < K; ++d) want += double((*s.query)[size_t(d)]) * key[d];
        }
        EXPECT_NEAR((*s.scores)[size_t(j)], want, 1e-4) << j;
      }
      std::vector<double> ctx(size_t(Dv), 0.0);
      for (int64_t j = 0; j < S; ++j)
        for (int64_t d = 0; d < Dv; ++d) ctx[size_t(d)] += s.weights[size_t(j)] * enc.memory.values().data()[j * Dv + d];
      EXPECT_NEAR(*s.context_norm, std::sqrt(std::inner_product(ctx.begin(), ctx.end(), ctx.begin(), 0.0)), 1e-5);
    }
  }
}

TEST(Explain, OptionsOutOfRangeAreRejected) {
  Rng init(5);
  auto model = models::make_model(kinds()[0].config, init, 1);
  model->train(false);
  decode::ExplainOptions o;
  o.top_k = 0;
  EXPECT_THROW(decode::explain_ids(*model, kSource, o), std::invalid_argument);
  o.top_k = 3, o.beam = 0;
  EXPECT_THROW(decode::explain_ids(*model, kSource, o), std::invalid_argument);
  EXPECT_THROW(decode::explain_ids(*model, {}, {}), std::invalid_argument);
}

// --words on a hand-built explanation: source "▁he ▁does n't ▁go" (3 words),
// target "▁il ▁ne ▁va ▁pa s" + EOS (4 words + EOS).
TEST(Explain, WordsMergeSumsColumnsAndAveragesRows) {
  json e = {{"model", "luong"}, {"score", "dot"}, {"window", nullptr}, {"beam", 1},
            {"src_tokens", {"\xE2\x96\x81he", "\xE2\x96\x81" "does", "n't", "\xE2\x96\x81go"}},
            {"tgt_tokens", {"\xE2\x96\x81il", "\xE2\x96\x81ne", "\xE2\x96\x81va", "\xE2\x96\x81pa", "s"}},
            {"translation", "il ne va pas"}};
  const std::vector<std::vector<double>> w = {{0.7, 0.1, 0.1, 0.1}, {0.1, 0.5, 0.3, 0.1}, {0.1, 0.1, 0.1, 0.7},
                                              {0.2, 0.4, 0.2, 0.2}, {0.0, 0.2, 0.6, 0.2}, {0.25, 0.25, 0.25, 0.25}};
  json steps = json::array();
  for (size_t t = 0; t < w.size(); ++t) {
    json s;
    s["t"] = t + 1;
    s["query"] = {double(t), 1.0};
    s["query_norm"] = double(t) + 0.5;
    s["scores"] = {1.0, 2.0, t == 4 ? json(nullptr) : json(0.5), 3.0};
    s["weights"] = w[t];
    s["context_norm"] = 1.0;
    s["position"] = nullptr;
    s["window_range"] = t == 3 ? json({0, 2}) : t == 4 ? json({1, 4}) : json(nullptr);
    s["top_k"] = {{{"token", "x" + std::to_string(t)}, {"prob", 0.5}}};
    s["chosen"] = t < 5 ? e["tgt_tokens"][t] : json("</s>");
    s["chosen_prob"] = 0.5 + 0.1 * double(t % 3);
    steps.push_back(s);
  }
  e["steps"] = steps;
  json m = decode::merge_words(e);
  EXPECT_EQ(m["src_tokens"], json({"\xE2\x96\x81he", "\xE2\x96\x81" "doesn't", "\xE2\x96\x81go"}));
  EXPECT_EQ(m["tgt_tokens"], json({"\xE2\x96\x81il", "\xE2\x96\x81ne", "\xE2\x96\x81va", "\xE2\x96\x81pas"}));
  ASSERT_EQ(m["steps"].size(), 5u);  // four words + EOS
  // word 4 "▁pas" = steps 4 and 5: columns summed (he | does + n't | go), rows averaged
  const json& pas = m["steps"][3];
  const std::vector<double> want = {(0.2 + 0.0) / 2, (0.6 + 0.8) / 2, (0.2 + 0.2) / 2};
  for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(pas["weights"][k].get<double>(), want[k], 1e-12) << k;
  for (const json& s : m["steps"]) {
    double sum = 0;
    for (const json& x : s["weights"]) sum += x.get<double>();
    EXPECT_NEAR(sum, 1.0, 1e-12);
  }
  EXPECT_EQ(pas["t"], 4);
  EXPECT_EQ(pas["chosen"], "\xE2\x96\x81pas");
  EXPECT_NEAR(pas["chosen_prob"].get<double>(), (0.5 + 0.1 * 0) * (0.5 + 0.1 * 1), 1e-12);  // steps 4, 5: t % 3 = 0, 1
  EXPECT_EQ(pas["window_range"], json({0, 4}));  // the union of [0, 2) and [1, 4)
  EXPECT_EQ(pas["query_norm"], 3.5);             // its first piece's (step 4)
  EXPECT_EQ(pas["top_k"][0]["token"], "x3");
  // scores: log sum exp over a word's visible pieces, then the mean over the word's steps
  const double lse = std::log(std::exp(2.0) + std::exp(0.5));
  EXPECT_NEAR(pas["scores"][1].get<double>(), (lse + 2.0) / 2, 1e-12);  // step 5 hides "n't"
  EXPECT_NEAR(pas["scores"][0].get<double>(), 1.0, 1e-12);
  EXPECT_EQ(m["steps"][4]["chosen"], "</s>");
  EXPECT_NEAR(m["steps"][0]["weights"][1].get<double>(), 0.2, 1e-12);  // ▁does + n't of step 1
  // the text form of the same explanation: a hidden score reads "masked", a step's window is shown
  const std::string table = decode::explanation_table(e);
  for (const char* want_text : {"model luong, score dot, beam 1", "t=5  query |q| = 4.500  context |c| = 1.000  window [1, 4)",
                                "masked", "chosen: </s>  p = 0.700", "translation: il ne va pas"})
    EXPECT_NE(table.find(want_text), std::string::npos) << want_text << "\n" << table;
  // malformed input names the field
  json bad = e;
  bad.erase("steps");
  try {
    decode::merge_words(bad);
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("steps"), std::string::npos) << err.what();
  }
}

// Seed 002's numbers: W_Q, W_K, W_V as NumPy draws them, and the weights and
// outputs NumPy computes (tests/oracle/general_attention_numpy.py).
TEST(ExplainExample, GeneralAttentionPrintsTheTutorialsNumbers) {
  const SafetensorsFile f = run_oracle("general_attention_numpy.py", "");
  decode::GeneralAttentionExample ex = decode::general_attention_example();
  EXPECT_EQ(compare(ex.words, f.get("words")).max_abs, 0.0);
  EXPECT_EQ(compare(ex.W_Q, f.get("W_Q")).max_abs, 0.0);
  EXPECT_EQ(compare(ex.W_K, f.get("W_K")).max_abs, 0.0);
  EXPECT_EQ(compare(ex.W_V, f.get("W_V")).max_abs, 0.0);
  EXPECT_LE(max_rel_diff(ex.weights, f.get("weights")), 1e-5);
  EXPECT_LE(max_rel_diff(ex.outputs, f.get("attention")), 1e-5);
  const std::string text = decode::general_attention_text(ex);
  // the tutorial's printed outputs [[0.98522025 1.74174051 0.75652026] [0.90965265 1.40965265 0.5]
  // [0.99851226 1.75849334 0.75998108] [0.99560386 1.90407309 0.90846923]] to the 6 decimals
  // printed (float32 holds about 7 digits; the values above are compared with NumPy's to 1e-5)
  for (const char* s : {"[[0.985220 1.741741 0.756520]\n [0.909653 1.409653 0.500000]\n [0.998512 1.758493 0.759981]\n"
                        " [0.995604 1.904073 0.908469]]",
                        "attention = sum_j weights_j v_j = [0.985220 1.741741 0.756520]",
                        "W_Q =\n[[2 0 2]\n [2 0 0]\n [2 1 2]]", "scores = [8 2 10 2]"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  EXPECT_EQ(decode::example_text("general-attention"), text);
}

// Seed 003's walk: the named quantities of Figures 3-7, each computed by the
// AdditiveAttention layer, and the toy translation.
TEST(ExplainExample, TranslationStepWalksTheFigures) {
  decode::TranslationStepExample ex = decode::translation_step_example();
  ASSERT_EQ(ex.steps.size(), 4u);
  std::string out;
  for (const auto& r : ex.steps) out += ex.target_words[size_t(r.y)] + " ";
  EXPECT_EQ(out, "le chat dort [STOP] ");
  for (const auto& r : ex.steps) {
    float total = 0;
    for (int64_t j = 0; j < 3; ++j) {
      // e_tj = v^T tanh(W_1 s + W_2 h_j + b) with the example's W_1 = 5 I, W_2 = 2 I, b = -5, v = 3
      double e = 0;
      for (int64_t a = 0; a < 3; ++a) e += 3 * std::tanh(5 * r.s_prev.data()[a] + 2 * ex.h.data()[j * 3 + a] - 5);
      EXPECT_NEAR(r.e.data()[j], e, 1e-5);
      total += r.a.data()[j];
    }
    EXPECT_NEAR(total, 1.0f, 1e-6);
    for (int64_t d = 0; d < 3; ++d) {
      float c = 0;
      for (int64_t j = 0; j < 3; ++j) c += r.a.data()[j] * ex.h.data()[j * 3 + d];
      EXPECT_NEAR(r.c.data()[d], c, 1e-6);
    }
  }
  EXPECT_GT(ex.steps[0].a.data()[0], 0.8f);  // t = 1 looks at "the", t = 2 at "cat"
  EXPECT_GT(ex.steps[1].a.data()[1], 0.8f);
  const std::string text = decode::translation_step_text(ex);
  for (const char* s : {"h_1 = [1 0 0]", "s_0 = [1 0 0]", "Figure 3", "Figure 4", "Figure 5", "Figure 6", "Figure 7",
                        "e_1,1 = ", "a_1,1 = ", "c_1 = ", "y_1 = le", "s_1 = ", "e_2,2 = ", "c_2 = ", "y_2 = chat",
                        "output: le chat dort [STOP]"})
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  char e11[64];
  std::snprintf(e11, sizeof e11, "e_1,1 = %.3f", double(ex.steps[0].e.data()[0]));
  EXPECT_NE(text.find(e11), std::string::npos) << text;
  try {
    decode::example_text("nope");
    ADD_FAILURE() << "no error";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("general-attention, translation-step"), std::string::npos);
  }
}

// ---- on a tiny trained run, through explain_text and the command ----

class ExplainRun : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir("explain_run");
    write_toy(dir_->path, "train", 400, 1);
    write_toy(dir_->path, "valid", 20, 2);
    train::RunOptions quiet;
    quiet.print = [](const std::string&) {};
    train::train_translation(
        train::parse_train_config(toy_config(dir_->path, dir_->path + "/run",
                                             "  max_steps: 40\n  max_epochs: 0\n  valid_every: 20\n  threads: 1\n")),
        quiet);
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string run() { return dir_->path + "/run"; }
  static TempDir* dir_;
};
TempDir* ExplainRun::dir_ = nullptr;

// The JSON's tokens and weights are decode::search's, greedy and beam, and
// hold every field of the contract.
TEST_F(ExplainRun, JsonIsTheSearchsPath) {
  decode::TranslationModel tm = decode::load_translation_model(run());
  const std::string text = "one two three four .";
  for (int beam : {1, 4}) {
    decode::ExplainOptions o;
    o.beam = beam;
    json j = decode::explain_text(tm, text, o);
    const std::vector<int> src = tm.src_vocab->encode(text);
    const int64_t S = int64_t(src.size());
    decode::SearchOptions so;
    so.beam = beam;
    const decode::Hypothesis h =
        decode::search(*tm.model, Tensor::from(std::vector<float>(src.begin(), src.end()), {1, S}), {S}, so)
            .at(0)
            .hypotheses.at(0);
    EXPECT_EQ(j["model"], "rnnsearch");
    EXPECT_EQ(j["score"], "additive");
    EXPECT_TRUE(j["window"].is_null());
    EXPECT_EQ(j["beam"], beam);
    ASSERT_EQ(j["src_tokens"].size(), src.size());
    for (size_t i = 0; i < src.size(); ++i) EXPECT_EQ(j["src_tokens"][i], tm.src_vocab->piece(src[i]));
    ASSERT_EQ(j["tgt_tokens"].size(), h.tokens.size());
    for (size_t i = 0; i < h.tokens.size(); ++i) EXPECT_EQ(j["tgt_tokens"][i], tm.tgt_vocab->piece(h.tokens[i]));
    EXPECT_EQ(j["translation"], tm.tgt_vocab->decode(h.tokens));
    ASSERT_EQ(j["steps"].size() * size_t(S), h.attention.size());
    for (size_t t = 0; t < j["steps"].size(); ++t) {
      const json& s = j["steps"][t];
      EXPECT_EQ(s["t"], t + 1);
      for (const char* f : {"query", "query_norm", "scores", "weights", "context_norm", "position", "window_range",
                            "top_k", "chosen", "chosen_prob"})
        EXPECT_TRUE(s.contains(f)) << f;
      for (int64_t k = 0; k < S; ++k)
        EXPECT_NEAR(s["weights"][size_t(k)].get<double>(), h.attention[t * size_t(S) + size_t(k)], 1e-5);
      EXPECT_EQ(s["top_k"].size(), 5u);
    }
    // --words: the same path merged; every row still sums to 1
    o.words = true;
    json w = decode::explain_text(tm, text, o);
    EXPECT_EQ(w["translation"], j["translation"]);
    EXPECT_LE(w["src_tokens"].size(), j["src_tokens"].size());
    for (const json& s : w["steps"]) {
      double sum = 0;
      for (const json& x : s["weights"]) sum += x.get<double>();
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  EXPECT_THROW(decode::explain_text(tm, "bad \xff", {}), std::invalid_argument);
  EXPECT_THROW(decode::explain_text(tm, "   ", {}), std::invalid_argument);
}

TEST_F(ExplainRun, Command) {
  const std::string& d = dir_->path;
  const std::string model = " -m " + run() + " --threads 1";
  CommandResult r = run_attn("explain" + model + " --format json", d, "one two .\nred cat .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines;
  std::stringstream ss(r.out);
  for (std::string l; std::getline(ss, l);) lines.push_back(l);
  ASSERT_EQ(lines.size(), 2u) << r.out;
  for (const std::string& l : lines) {
    json j = json::parse(l);
    EXPECT_FALSE(j["steps"].empty());
    EXPECT_EQ(j["steps"][0]["top_k"].size(), 5u);
  }
  // the text form: a table per step
  r = run_attn("explain" + model + " --top-k 3 --beam 2", d, "one two .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"model rnnsearch, score additive, beam 2", "t=1  query |q| = ", "score  weight", "top 3:",
                        "chosen: ", "translation: "})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  data::write_lines(d + "/in.txt", {"one two three ."});
  r = run_attn("explain" + model + " --words --format json -i " + d + "/in.txt", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["src_tokens"].size(), 4u) << r.out;  // one, two, three, .
  // bad input: the line is named
  r = run_attn("explain" + model, d, "one .\n\xff\xfe .\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("stdin:2"), std::string::npos) << r.err;
  r = run_attn("explain" + model, d, "one .\n\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("stdin:2: text: empty"), std::string::npos) << r.err;
  r = run_attn("explain --example nope", d);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("unknown example \"nope\""), std::string::npos) << r.err;
  r = run_attn("explain", d, "one .\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--model"), std::string::npos) << r.err;
  // a luong run with local-p attention: the window and the predicted position, in both forms
  train::RunOptions quiet;
  quiet.print = [](const std::string&) {};
  const std::string luong = "  type: luong\n  embed: 16\n  encoder_hidden: 16\n  decoder_hidden: 32\n  attention: 16\n"
                            "  score: dot\n  window: local-p\n  window_half_width: 1\n";
  train::train_translation(train::parse_train_config(toy_config(
                               d, d + "/luong", "  max_steps: 20\n  max_epochs: 0\n  valid_every: 20\n  threads: 1\n",
                               "", luong)),
                           quiet);
  r = run_attn("explain -m " + d + "/luong --threads 1 --format json", d, "one two three four five .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  json lp = json::parse(r.out);
  EXPECT_EQ(lp["model"], "luong");
  EXPECT_EQ(lp["score"], "dot");
  EXPECT_EQ(lp["window"], json({{"kind", "local-p"}, {"D", 1}}));
  for (const json& s : lp["steps"]) {
    EXPECT_TRUE(s["position"].is_number()) << s.dump();
    ASSERT_TRUE(s["window_range"].is_array()) << s.dump();
    for (size_t j = 0; j < s["scores"].size(); ++j) {
      const bool in = int64_t(j) >= s["window_range"][0].get<int64_t>() && int64_t(j) < s["window_range"][1].get<int64_t>();
      EXPECT_EQ(s["scores"][j].is_null(), !in) << j << " " << s.dump();
    }
  }
  r = run_attn("explain -m " + d + "/luong --threads 1", d, "one two three four five .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* s : {"window local-p D = 1", "p_t = ", "masked"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
  r = run_attn("explain --example general-attention", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("[0.985220"), std::string::npos) << r.out;
  r = run_attn("explain --example translation-step", d);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("output: le chat dort [STOP]"), std::string::npos) << r.out;
}

// --heatmap: each line's steps x source tokens as cells holding the JSON's weights,
// rows labelled by the chosen tokens; several lines are numbered, one line is FILE itself.
TEST_F(ExplainRun, HeatmapHoldsTheExplainedWeights) {
  const std::string& d = dir_->path;
  const std::string model = " -m " + run() + " --threads 1";
  CommandResult r = run_attn("explain" + model + " --format json --heatmap " + d + "/map.svg", d, "one two .\nred cat .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(std::filesystem::exists(d + "/map.svg")) << "two lines: numbered files";
  std::stringstream ss(r.out);
  size_t line = 0;
  for (std::string l; std::getline(ss, l);) {
    ++line;
    const json e = json::parse(l);
    const std::string svg = read_bytes(d + "/map-000" + std::to_string(line) + ".svg");
    size_t cells = 0;
    for (size_t at = svg.find("class=\"cell\""); at != std::string::npos; at = svg.find("class=\"cell\"", at + 1)) ++cells;
    EXPECT_EQ(cells, e["steps"].size() * e["src_tokens"].size());
    for (size_t i = 0; i < e["steps"].size(); ++i)
      for (size_t j = 0; j < e["src_tokens"].size(); ++j) {
        const std::string cell = "data-r=\"" + std::to_string(i) + "\" data-c=\"" + std::to_string(j) + "\" data-w=\"" +
                                 viz::format_weight(e["steps"][i]["weights"][j].get<float>()) + "\"";
        EXPECT_NE(svg.find(cell), std::string::npos) << cell;
      }
    EXPECT_NE(svg.find(">&lt;/s&gt;</text>"), std::string::npos) << "the EOS step's row";
  }
  EXPECT_EQ(line, 2u);
  r = run_attn("explain" + model + " --heatmap " + d + "/one.png", d, "one two .\n");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_bytes(d + "/one.png").substr(0, 4), "\x89PNG");
  EXPECT_NE(r.err.find("written to " + d + "/one.png"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace attn::testing::explain_test
