// nn::MultiHeadAttention against torch.nn.MultiheadAttention (same weights):
// output, per-head weights, gradients of inputs and of every parameter; and
// PositionalEncoding's table against the formula.
#include <gtest/gtest.h>

#include <cmath>

#include "attn/nn/additive_attention.h"
#include "attn/nn/attention_layer.h"
#include "attn/nn/multihead.h"
#include "oracle.h"

namespace attn::testing {
namespace {

class MultiHeadOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(MultiHeadOracle, MatchesTorch) {
  const std::string c = GetParam();
  SafetensorsFile f = run_oracle("mha.py", c);
  Rng rng(1);
  nn::MultiHeadAttention mha(nn::MultiHeadAttentionOptions(8, 2), rng);
  auto params = mha.named_parameters();
  ASSERT_EQ(params.size(), 4u);
  for (auto& [name, p] : params) p.copy_from(f.get(name));  // torch's names, one to one
  Tensor query = f.get("query").clone().set_requires_grad();
  Tensor key = query, value = query;
  attention::Mask mask;
  const bool cross = c.rfind("cross", 0) == 0;
  if (cross) {
    key = f.get("key").clone().set_requires_grad();
    value = f.get("value").clone().set_requires_grad();
  }
  if (c == "cross_lengths" || c == "self_keep_lengths") mask.key_lengths = f.get("lengths");
  if (c == "self_keep_lengths") mask.keep = f.get("keep");  // [Lq, Lk], 1 = visible
  if (c == "self_causal") mask.causal = true;
  attention::AttentionOutput o = mha.forward(query, key, value, mask, true);
  EXPECT_CLOSE(o.context, f.get("output"), 1e-4, "output");
  EXPECT_CLOSE(o.weights, f.get("weights"), 1e-4, "weights");
  {  // the fused path (no weights) gives the same output
    NoGradGuard ng;
    mha.options.kernel = attention::Kernel::Fused;
    EXPECT_CLOSE(mha.forward(query, key, value, mask, false).context, f.get("output"), 1e-4, "fused output");
    mha.options.kernel = attention::Kernel::Auto;
  }
  backward(add(sum_all(mul(o.context, f.get("r_y"))), sum_all(mul(o.weights, f.get("r_w")))));
  EXPECT_CLOSE(query.grad(), f.get("g_query"), 1e-3, "g_query");
  if (cross) {
    EXPECT_CLOSE(key.grad(), f.get("g_key"), 1e-3, "g_key");
    EXPECT_CLOSE(value.grad(), f.get("g_value"), 1e-3, "g_value");
  }
  for (auto& [name, p] : params) EXPECT_CLOSE(p.grad(), f.get("g_" + name), 1e-3, "g_" + name);
}

INSTANTIATE_TEST_SUITE_P(Torch, MultiHeadOracle, ::testing::Values("cross_lengths", "self_causal", "cross_none", "self_none",
                                                                  "self_keep_lengths"));

TEST(PositionalEncoding, SinusoidTableAndShape) {
  Rng rng(1);
  nn::PositionalEncoding pe(6, 50, 0.0f, rng);
  for (int64_t pos : {0, 1, 7, 49})
    for (int64_t i = 0; i < 6; ++i) {
      double a = double(pos) / std::pow(10000.0, double(2 * (i / 2)) / 6.0);
      EXPECT_NEAR(pe.table.data()[pos * 6 + i], i % 2 ? std::cos(a) : std::sin(a), 1e-6) << pos << "," << i;
    }
  Tensor x = Tensor::zeros({2, 4, 6});
  Tensor y = pe.forward(x);
  ASSERT_EQ(y.shape(), (Shape{2, 4, 6}));
  for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(y.data()[24 + i], pe.table.data()[i]);  // batch 1 = table rows 0..3
  EXPECT_THROW(pe.forward(Tensor::zeros({1, 51, 6})), std::invalid_argument);
}

// With positional encodings the model can tell positions apart: self-attention
// is no longer permutation-equivariant (the property test's counterpart).
TEST(PositionalEncoding, BreaksPermutationEquivariance) {
  Rng rng(2);
  nn::MultiHeadAttention mha(nn::MultiHeadAttentionOptions(8, 2), rng);
  nn::PositionalEncoding pe(8, 16, 0.0f, rng);
  Tensor x = randn({1, 5, 8}, rng);
  Tensor xs = Tensor::empty(x.shape());  // swap positions 0 and 3
  const int64_t perm[5] = {3, 1, 2, 0, 4};
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t d = 0; d < 8; ++d) xs.data()[i * 8 + d] = x.data()[perm[i] * 8 + d];
  auto run = [&](const Tensor& in, bool with_pe) {
    Tensor h = with_pe ? pe.forward(in) : in;
    return mha.forward(h, h, h).context;
  };
  auto permuted = [&](const Tensor& y) {
    Tensor p = Tensor::empty(y.shape());
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t d = 0; d < 8; ++d) p.data()[i * 8 + d] = y.data()[perm[i] * 8 + d];
    return p;
  };
  EXPECT_LT(max_rel_diff(run(xs, false), permuted(run(x, false))), 1e-5);
  EXPECT_GT(max_rel_diff(run(xs, true), permuted(run(x, true))), 1e-2);
}

}  // namespace
}  // namespace attn::testing

namespace attn::testing {
namespace {

// The fused decoder step and the composed additive score path (scores ->
// masked softmax -> weights @ v, all generic ops) are independent
// implementations of the same function: equal context, weights and gradients.
// B = 3 projects the query with BLAS, B = 19 on the register tile (batch rows
// on 16 lanes, padded to 32).
class AdditiveStepBatch : public ::testing::TestWithParam<int64_t> {};

TEST_P(AdditiveStepBatch, FusedStepMatchesComposedScores) {
  Rng rng(6);
  const int64_t B = GetParam(), Lk = 9, Qd = 7, Kd = 5, A = 20;
  nn::AdditiveAttention att(Qd, Kd, A, rng);
  Tensor s0 = randn({B, Qd}, rng), h0 = randn({B, Lk, Kd}, rng);
  Tensor lengths = Tensor::empty({B});
  // row 0 sees every key, row 1 none (context and weights 0, no gradient)
  for (int64_t b = 0; b < B; ++b) lengths.data()[b] = float(b == 0 ? Lk : b == 1 ? 0 : 1 + (b * 5) % Lk);
  Tensor rc = randn({B, Kd}, rng), rw = randn({B, Lk}, rng);
  std::vector<Tensor> outs[2], grads[2];
  for (int path = 0; path < 2; ++path) {
    att.zero_grad();
    Tensor s = s0.clone().set_requires_grad(), h = h0.clone().set_requires_grad();
    Tensor ctx, w;
    if (path == 0) {
      attention::AdditiveStepOutput o = att.step(s, att.project_keys(h), h, lengths);
      ctx = o.context, w = o.weights;
    } else {  // one query per batch entry, H = 1
      attention::AttentionOptions opt;
      opt.need_weights = true;
      opt.mask.key_lengths = lengths;
      attention::Additive sc{att.query_proj_weight, att.key_proj_weight, att.v, Tensor()};
      // the key bias enters through the query side: W1 s + (W2 h + b) = (W1 s + b) + W2 h
      sc.bias = att.key_proj_bias;
      attention::AttentionOutput o = attention::attention(reshape(s, {B, 1, 1, Qd}), reshape(h, {B, 1, Lk, Kd}),
                                                          reshape(h, {B, 1, Lk, Kd}), sc, opt);
      ctx = reshape(o.context, {B, Kd}), w = reshape(o.weights, {B, Lk});
    }
    backward(add(sum_all(mul(ctx, rc)), sum_all(mul(w, rw))));
    outs[path] = {ctx, w};
    grads[path] = {s.grad(), h.grad()};
    for (auto& [name, p] : att.named_parameters()) grads[path].push_back(p.grad().clone());
  }
  EXPECT_CLOSE(outs[0][0], outs[1][0], 1e-5, "context");
  EXPECT_CLOSE(outs[0][1], outs[1][1], 1e-5, "weights");
  ASSERT_EQ(grads[0].size(), 6u);
  for (size_t i = 0; i < grads[0].size(); ++i) EXPECT_CLOSE(grads[0][i], grads[1][i], 1e-4, "gradient " + std::to_string(i));
}

INSTANTIATE_TEST_SUITE_P(AdditiveAttention, AdditiveStepBatch, ::testing::Values(3, 19));

}  // namespace
}  // namespace attn::testing

namespace attn::testing {
namespace {

// nn::AttentionLayer registers exactly the parameters its score and window use
// (their values are checked against PyTorch in test_attention_oracle.cpp) and
// rejects settings that cannot work, naming them.
TEST(AttentionLayer, ParametersPerScoreAndBadOptions) {
  Rng rng(2);
  auto names = [&](const nn::AttentionLayerOptions& o) {
    std::vector<std::string> n;
    for (auto& [name, p] : nn::AttentionLayer(o, rng).named_parameters()) n.push_back(name + ":" + p.shape().str());
    return n;
  };
  using K = nn::ScoreKind;
  EXPECT_TRUE(names(nn::AttentionLayerOptions(K::ScaledDot, 8, 8)).empty());
  EXPECT_EQ(names(nn::AttentionLayerOptions(K::General, 6, 8)), std::vector<std::string>({"W:[6, 8]"}));
  EXPECT_EQ(names(nn::AttentionLayerOptions(K::Additive, 6, 8).set_attn_dim(5)),
            std::vector<std::string>({"W1:[5, 6]", "W2:[5, 8]", "v:[5]", "bias:[5]"}));
  EXPECT_EQ(names(nn::AttentionLayerOptions(K::Concat, 6, 8).set_attn_dim(5)),
            std::vector<std::string>({"Wa:[5, 14]", "v:[5]"}));
  EXPECT_EQ(names(nn::AttentionLayerOptions(K::Dot, 4, 4).set_attn_dim(3).set_window(attention::Window::LocalPredictive, 2)),
            std::vector<std::string>({"Wp:[3, 4]", "vp:[3]"}));
  EXPECT_THROW(nn::AttentionLayer(nn::AttentionLayerOptions(K::Dot, 4, 6), rng), std::invalid_argument);
  EXPECT_THROW(nn::AttentionLayer(nn::AttentionLayerOptions(K::General, 4, 4).set_dropout(1.0f), rng), std::invalid_argument);

  // dropout acts in training mode only
  nn::AttentionLayer layer(nn::AttentionLayerOptions(K::ScaledDot, 4, 4).set_dropout(0.5f), rng);
  Tensor q = randn({1, 1, 20, 4}, rng), k = randn({1, 1, 20, 4}, rng), v = randn({1, 1, 20, 4}, rng);
  NoGradGuard ng;
  layer.train(false);
  Tensor eval1 = layer.forward(q, k, v).context, eval2 = layer.forward(q, k, v).context;
  EXPECT_CLOSE(eval1, eval2, 0.0, "eval mode is deterministic");
  layer.train(true);
  EXPECT_GT(max_rel_diff(layer.forward(q, k, v).context, eval1), 1e-2);
}

}  // namespace
}  // namespace attn::testing
