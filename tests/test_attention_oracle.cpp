// Every score function (and local-m/local-p, and the additive decoder step)
// against PyTorch (tests/oracle/attention.py): context, weights and the
// gradient of every input and parameter, with and without each kind of mask.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "attn/attention/additive_step.h"
#include "attn/attention/attention.h"
#include "attn/nn/attention_layer.h"
#include "oracle.h"

namespace attn::testing::attention_oracle_test {
namespace {
using namespace attn::attention;

struct OracleCase {
  std::string score, mask;
};

class AttentionOracle : public ::testing::TestWithParam<OracleCase> {};


TEST_P(AttentionOracle, ContextWeightsAndGradients) {
  const OracleCase& c = GetParam();
  // one python run writes every case, under "score/mask/"
  const SafetensorsFile file = run_oracle("attention.py", "all");
  const std::string prefix = c.score + "/" + c.mask + "/";
  struct View {
    const SafetensorsFile& f;
    const std::string& prefix;
    const Tensor& get(const std::string& n) const { return f.get(prefix + n); }
    bool has(const std::string& n) const { return f.has(prefix + n); }
  } f{file, prefix};
  auto leaf = [](const View& v, const std::string& name) { return v.get(name).clone().set_requires_grad(); };
  std::vector<std::pair<std::string, Tensor>> inputs;  // name in the file -> our leaf
  auto in = [&](const std::string& name) {
    Tensor t = leaf(f, name);
    inputs.emplace_back(name, t);
    return t;
  };
  auto case_mask = [&] {  // the case's mask, as the oracle applied it
    Mask m;
    if (f.has("lengths")) m.key_lengths = f.get("lengths");
    if (f.has("keep")) m.keep = f.get("keep");
    m.causal = c.mask == "causal" || c.mask == "all";
    return m;
  };
  Tensor ctx, w;
  if (c.score == "additive_step") {
    Tensor query = in("query"), keys = in("keys"), values = in("values"), W1 = in("W1"), W2 = in("W2"),
           bias = in("bias"), v = in("v");
    Tensor lengths = f.get("lengths");
    AdditiveStepOutput o = additive_step(query, project_keys(keys, W2, bias), values, W1, v, lengths);
    ctx = o.context, w = o.weights;
  } else {
    Tensor q = in("q"), k = in("k"), v = in("v");
    AttentionOptions opt;
    opt.need_weights = true;
    opt.mask = case_mask();
    Score score;
    if (c.score == "dot") score = Dot{};
    if (c.score == "scaled_dot") score = ScaledDot{};
    if (c.score == "general" || c.score.rfind("local", 0) == 0) score = General{in("W")};
    if (c.score == "additive") score = Additive{in("W1"), in("W2"), in("va"), in("bias")};
    if (c.score == "concat") score = Concat{in("Wa"), in("va")};
    if (c.score == "local_m") {
      opt.local.window = Window::LocalMonotonic;
      opt.local.half_width = 2;
      opt.local.position_offset = 1;
    }
    if (c.score == "local_p") {
      opt.local.window = Window::LocalPredictive;
      opt.local.half_width = 2;
      opt.local.Wp = in("Wp");
      opt.local.vp = in("vp");
    }
    AttentionOutput o = attention::attention(q, k, v, score, opt);
    ctx = o.context, w = o.weights;
    ASSERT_TRUE(w.defined());

    if (c.score == "scaled_dot" || c.score == "dot" || c.score == "general") {  // the fused kernel: same context
      NoGradGuard ng;
      AttentionOptions fo = opt;
      fo.need_weights = false;
      fo.kernel = Kernel::Fused;
      EXPECT_CLOSE(attention::attention(q, k, v, score, fo).context, f.get("context"), 1e-4, "fused context");
    }
  }
  EXPECT_CLOSE(ctx, f.get("context"), 1e-4, "context");
  EXPECT_CLOSE(w, f.get("weights"), 1e-4, "weights");
  Tensor loss = add(sum_all(mul(ctx, f.get("r_ctx"))), sum_all(mul(w, f.get("r_w"))));
  backward(loss);
  int checked = 0;
  for (auto& [name, t] : inputs) {
    ASSERT_TRUE(f.has("g_" + name)) << name;
    ASSERT_TRUE(t.grad().defined()) << "no gradient for " << name;
    EXPECT_CLOSE(t.grad(), f.get("g_" + name), 1e-3, "gradient of " + name);
    ++checked;
  }
  EXPECT_GE(checked, 3);
  if (c.score == "additive_step") return;

  // The same case through nn::AttentionLayer, torch's parameters copied in
  // (file name -> parameter name): context, weights and every gradient.
  const int64_t D = f.get("q").size(3), Dk = f.get("k").size(3);
  nn::ScoreKind kind = c.score == "dot"        ? nn::ScoreKind::Dot
                       : c.score == "scaled_dot" ? nn::ScoreKind::ScaledDot
                       : c.score == "additive"   ? nn::ScoreKind::Additive
                       : c.score == "concat"     ? nn::ScoreKind::Concat
                                                 : nn::ScoreKind::General;  // general, local_m, local_p
  nn::AttentionLayerOptions lo(kind, D, Dk);
  if (f.has("va")) lo.set_attn_dim(f.get("va").size(0));
  if (f.has("vp")) lo.set_attn_dim(f.get("vp").size(0));
  if (c.score == "local_m") lo.set_window(Window::LocalMonotonic, 2);
  if (c.score == "local_p") lo.set_window(Window::LocalPredictive, 2);
  Rng rng(1);
  nn::AttentionLayer layer(lo, rng);
  const std::map<std::string, std::string> file_name = {{"W", "W"},   {"W1", "W1"}, {"W2", "W2"}, {"bias", "bias"},
                                                        {"v", "va"},  {"Wa", "Wa"}, {"Wp", "Wp"}, {"vp", "vp"}};
  auto params = layer.named_parameters();
  for (auto& [name, p] : params) p.copy_from(f.get(file_name.at(name)));
  Tensor q = f.get("q").clone().set_requires_grad(), k = f.get("k").clone().set_requires_grad(),
         v = f.get("v").clone().set_requires_grad();
  AttentionOutput lout = layer.forward(q, k, v, case_mask(), true, c.score == "local_m" ? 1 : 0);
  EXPECT_CLOSE(lout.context, f.get("context"), 1e-4, "layer context");
  EXPECT_CLOSE(lout.weights, f.get("weights"), 1e-4, "layer weights");
  backward(add(sum_all(mul(lout.context, f.get("r_ctx"))), sum_all(mul(lout.weights, f.get("r_w")))));
  EXPECT_CLOSE(q.grad(), f.get("g_q"), 1e-3, "layer gradient of q");
  EXPECT_CLOSE(k.grad(), f.get("g_k"), 1e-3, "layer gradient of k");
  EXPECT_CLOSE(v.grad(), f.get("g_v"), 1e-3, "layer gradient of v");
  for (auto& [name, p] : params) EXPECT_CLOSE(p.grad(), f.get("g_" + file_name.at(name)), 1e-3, "layer gradient of " + name);
}

std::vector<OracleCase> cases() {
  std::vector<OracleCase> v;
  for (const char* s : {"dot", "scaled_dot", "general", "additive", "concat"})
    for (const char* m : {"none", "lengths", "causal", "keep", "all"}) v.push_back({s, m});
  for (const char* m : {"none", "lengths", "all"}) {
    v.push_back({"local_m", m});
    v.push_back({"local_p", m});
  }
  v.push_back({"additive_step", "none"});
  v.push_back({"additive_step", "lengths"});
  return v;
}

INSTANTIATE_TEST_SUITE_P(Torch, AttentionOracle, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<OracleCase>& i) { return i.param.score + "_" + i.param.mask; });

// Seed 002's worked example of general attention (tests/oracle/general_attention_numpy.py):
// NumPy draws W_Q, W_K, W_V with random.seed(42) and computes the expected
// weights and output; we project the same four words with our matmul and run
// our attention on them. The tutorial prints (and NumPy reproduces here)
//   [[0.98522025 1.74174051 0.75652026]
//    [0.90965265 1.40965265 0.5       ]
//    [0.99851226 1.75849334 0.75998108]
//    [0.99560386 1.90407309 0.90846923]]
TEST(WorkedExample, GeneralAttentionOfSeed002) {
  const SafetensorsFile f = run_oracle("general_attention_numpy.py", "");
  const Tensor& words = f.get("words");  // [4 words, 3]
  ASSERT_EQ(words.shape(), Shape({4, 3}));
  Tensor Q = matmul(words, f.get("W_Q")), K = matmul(words, f.get("W_K")), V = matmul(words, f.get("W_V"));
  auto heads = [](const Tensor& t) { return reshape(t, {1, 1, t.size(0), 3}); };  // [B=1, H=1, L, 3]
  for (Kernel kern : {Kernel::Materialized, Kernel::Fused}) {
    SCOPED_TRACE(kern == Kernel::Fused ? "fused" : "materialized");
    AttentionOptions opt;
    opt.kernel = kern;
    opt.need_weights = kern == Kernel::Materialized;
    AttentionOutput o = scaled_dot_product_attention(heads(Q), heads(K), heads(V), opt);
    EXPECT_LE(max_rel_diff(reshape(o.context, {4, 3}), f.get("attention")), 1e-5);
    if (opt.need_weights) EXPECT_LE(max_rel_diff(reshape(o.weights, {4, 4}), f.get("weights")), 1e-5);
  }
  // the tutorial's first step: the first word's query alone against all four keys
  AttentionOutput first = scaled_dot_product_attention(heads(slice(Q, 0, 0, 1)), heads(K), heads(V));
  EXPECT_LE(max_rel_diff(reshape(first.context, {1, 3}), slice(f.get("attention"), 0, 0, 1)), 1e-5);
}

}  // namespace
}  // namespace attn::testing::attention_oracle_test
