// The Transformer's layers (nn/transformer_layers.h, nn/transformer_stacks.h)
// against PyTorch's nn.TransformerEncoderLayer / nn.TransformerDecoderLayer and a
// 2 + 2 layer nn.TransformerEncoder / nn.TransformerDecoder with final norms
// (tests/oracle/transformer.py): the same weights copied by name, key padding and
// causal masks, dropout 0; the output and every gradient (input, memory, each
// parameter). Printed per tensor: the largest absolute difference, it over the
// reference's largest magnitude, and compare.h's relative difference beyond rounding.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>

#include "attn/autograd/ops_dropout.h"
#include "attn/kernels/dropout_hash.h"
#include "attn/nn/positional_embedding.h"
#include "attn/nn/transformer_stacks.h"
#include "gradcheck.h"
#include "oracle.h"

namespace attn::testing::transformer_layers_test {
namespace {

// ---- finite-difference checks of the ops the layers added (gradcheck.h) ----
// Registered here, after every other file's cases (link order), so the seeds
// test_gradcheck.cpp hands the existing cases (one per case, in order) stay theirs.
using T = std::vector<Tensor>;

ATTN_GRADCHECK_CASE({"gelu", "both sides of 0", {{3, 5}}, [](const T& x) { return gelu(x[0]); }});
ATTN_GRADCHECK_CASE({"linear_act", "GELU, 3-D input with bias", {{2, 3, 4}, {5, 4}, {5}},
                     [](const T& x) { return linear_act(x[0], x[1], x[2], Activation::GELU); }});
ATTN_GRADCHECK_CASE({"linear_act", "GELU, no bias", {{3, 4}, {6, 4}},
                     [](const T& x) { return linear_act(x[0], x[1], Tensor(), Activation::GELU); }});
// ReLU's kink: the pre-activations x W^T + b are kept away from 0 by the bias
// (weights small, |bias| >= 0.5), so the step never crosses it
ATTN_GRADCHECK_CASE({"linear_act", "ReLU, pre-activations away from the kink", {{2, 3, 4}, {5, 4}, {5}},
                     [](const T& x) { return linear_act(x[0], x[1], x[2], Activation::ReLU); },
                     [](T& in) {
                       for (int64_t k = 0; k < in[1].numel(); ++k) in[1].data()[k] *= 0.05f;
                       for (int64_t k = 0; k < in[2].numel(); ++k) in[2].data()[k] += in[2].data()[k] >= 0 ? 0.5f : -0.5f;
                     }});
ATTN_GRADCHECK_CASE({"dropout_hashed", "p 0.4, rows of 7", {{3, 2, 7}},
                     [](const T& x) { return dropout_hashed(x[0], 0.4f, 77); }});
// cross [B, Lq, H D] over [B, Lk, 2 H D]: 2 heads of size 3, key lengths (one 0 row);
// then one head over several query and key blocks with causal mask and dropout
ATTN_GRADCHECK_CASE({"sdpa_fused_cross", "2 heads, key lengths 7 and 0", {{2, 5, 6}, {2, 7, 12}},
                     [](const T& x) {
                       attention::FusedOptions o;
                       o.scale = 0.6f;
                       o.mask.key_lengths = Tensor::from({7.0f, 0.0f}, {2});
                       return attention::sdpa_fused_cross(x[0], x[1], 2, o);
                     }});
ATTN_GRADCHECK_CASE({"sdpa_fused_cross", "spans several blocks, causal, dropout 0.2", {{1, 70, 3}, {1, 90, 6}},
                     [](const T& x) {
                       attention::FusedOptions o;
                       o.scale = 0.5f;
                       o.mask.causal = true;
                       o.dropout = 0.2f;
                       o.seed = 9;
                       return attention::sdpa_fused_cross(x[0], x[1], 1, o);
                     }});

struct LayerCase {
  std::string kind;  // encoder | decoder | stack
  bool pre_norm;
  Activation act;
  std::string args() const { return kind + (pre_norm ? " pre" : " post") + (act == Activation::GELU ? " gelu" : " relu"); }
};

std::string case_name(const ::testing::TestParamInfo<LayerCase>& i) {
  std::string s = i.param.args();
  for (char& c : s) c = c == ' ' ? '_' : c;
  return s;
}

nn::TransformerLayerOptions oracle_options(const LayerCase& c) {
  // the oracle's sizes: E 16, H 4, F 40 (B 3, S 21, T 19)
  return nn::TransformerLayerOptions(16, 4).set_dim_feedforward(40).set_dropout(0.0f).set_activation(c.act).set_norm_first(
      c.pre_norm);
}

// Copies param.<prefix><name> into every parameter of m; returns the count.
int load_params(nn::Module& m, const SafetensorsFile& f, const std::string& prefix) {
  int n = 0;
  for (auto& [name, p] : m.named_parameters()) {
    Tensor src = f.get("param." + prefix + name);
    EXPECT_EQ(src.shape(), p.shape()) << name;
    if (src.shape() != p.shape()) continue;
    p.copy_from(src);
    ++n;
  }
  return n;
}

void PrintTo(const LayerCase& c, std::ostream* os) { *os << c.args(); }

// max_rel within tol (compare.h's relative difference with a floor of 2e-3 of the
// tensor's scale); prints both differences for the record.
void check(const std::string& what, const Tensor& got, const Tensor& want, double tol) {
  ASSERT_TRUE(got.defined()) << what << " has no value (no gradient reached it?)";
  Diff d = compare(got, want, 2e-3, 1e-30);
  std::printf("  %-44s max abs %.2e  max abs / max |ref| %.2e  max rel (beyond rounding) %.2e\n", what.c_str(), d.max_abs,
              d.normwise(), d.max_rel);
  EXPECT_LE(d.max_rel, tol) << what << ": " << describe(d, d.worst, got, want);
}

class LayerOracle : public ::testing::TestWithParam<LayerCase> {};

TEST_P(LayerOracle, OutputAndEveryGradientMatchTorch) {
  const LayerCase c = GetParam();
  SafetensorsFile f = run_oracle("transformer.py", c.args());
  Rng rng(5);
  const nn::TransformerLayerOptions opt = oracle_options(c);
  const nn::TransformerStackOptions stack(opt, 2);
  std::shared_ptr<nn::TransformerEncoderLayer> enc_layer;
  std::shared_ptr<nn::TransformerDecoderLayer> dec_layer;
  std::shared_ptr<nn::TransformerEncoder> encoder;
  std::shared_ptr<nn::TransformerDecoder> decoder;
  std::vector<std::pair<std::string, nn::Module*>> modules;  // torch prefix -> module
  if (c.kind == "encoder") modules.emplace_back("", (enc_layer = std::make_shared<nn::TransformerEncoderLayer>(opt, rng)).get());
  if (c.kind == "decoder") modules.emplace_back("", (dec_layer = std::make_shared<nn::TransformerDecoderLayer>(opt, rng)).get());
  if (c.kind == "stack") {
    // nn.TransformerEncoder/Decoder(norm=LayerNorm) have the final norm for post-norm too
    encoder = std::make_shared<nn::TransformerEncoder>(nn::TransformerStackOptions(stack).set_final_norm(true), rng);
    decoder = std::make_shared<nn::TransformerDecoder>(nn::TransformerStackOptions(stack).set_final_norm(true), rng);
    modules = {{"encoder.", encoder.get()}, {"decoder.", decoder.get()}};
  }
  int copied = 0;
  for (auto& [prefix, m] : modules) copied += load_params(*m, f, prefix);
  ASSERT_EQ(copied, std::stoi(f.metadata.at("count"))) << "every torch parameter has an attn twin";

  Tensor x = f.get("x").clone().set_requires_grad();
  Tensor memory = c.kind == "encoder" ? Tensor() : f.get("memory").clone().set_requires_grad();
  const Tensor src_len = f.get("src_lengths"), tgt_len = f.get("tgt_lengths");
  Tensor y;
  if (enc_layer) y = enc_layer->forward(x, src_len);
  if (dec_layer) y = dec_layer->forward(x, memory, src_len, tgt_len);
  if (encoder) y = decoder->forward(x, encoder->forward(memory, src_len), src_len, tgt_len);
  backward(sum_all(mul(y, f.get("r"))));

  std::printf("%s\n", c.args().c_str());
  check("output", y, f.get("output"), 1e-4);
  check("g_x", x.grad(), f.get("g_x"), 1e-3);
  if (memory.defined()) check("g_memory", memory.grad(), f.get("g_memory"), 1e-3);
  for (auto& [prefix, m] : modules)
    for (auto& [name, p] : m->named_parameters()) check("g." + prefix + name, p.grad(), f.get("g." + prefix + name), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(
    Transformer, LayerOracle,
    ::testing::Values(LayerCase{"encoder", true, Activation::ReLU}, LayerCase{"encoder", true, Activation::GELU},
                      LayerCase{"encoder", false, Activation::ReLU}, LayerCase{"encoder", false, Activation::GELU},
                      LayerCase{"decoder", true, Activation::ReLU}, LayerCase{"decoder", true, Activation::GELU},
                      LayerCase{"decoder", false, Activation::ReLU}, LayerCase{"decoder", false, Activation::GELU},
                      LayerCase{"stack", true, Activation::GELU}, LayerCase{"stack", false, Activation::ReLU}),
    case_name);

// sdpa_fused_cross (q [B, Lq, E] and kv [B, Lk, 2E] read through strides) against
// sdpa_fused on the permuted heads: context and both gradients.
TEST(TransformerCross, SdpaFusedCrossMatchesPermutedSdpaFused) {
  for (bool causal : {false, true}) {
    Rng rng(11);
    const int64_t B = 2, Lq = 37, Lk = 75, H = 2, D = 8, E = H * D;
    Tensor q = randn({B, Lq, E}, rng).set_requires_grad(), kv = randn({B, Lk, 2 * E}, rng).set_requires_grad();
    Tensor r = randn({B, Lq, E}, rng);
    attention::FusedOptions o;
    o.scale = 0.35f;
    o.mask.causal = causal;
    o.mask.key_lengths = Tensor::from({75.0f, 30.0f}, {B});
    Tensor packed = attention::sdpa_fused_cross(q, kv, H, o);
    backward(sum_all(mul(packed, r)));
    Tensor gq = q.grad().clone(), gkv = kv.grad().clone();
    q.zero_grad(), kv.zero_grad();
    auto heads = [&](const Tensor& t, int64_t start, int64_t L) {
      return permute(reshape(slice(t, 2, start, E), {B, L, H, D}), {0, 2, 1, 3});
    };
    Tensor ref = attention::sdpa_fused(heads(q, 0, Lq), heads(kv, 0, Lk), heads(kv, E, Lk), o);
    Tensor ref_ble = reshape(permute(ref, {0, 2, 1, 3}), {B, Lq, E});
    backward(sum_all(mul(ref_ble, r)));
    EXPECT_CLOSE(packed, ref_ble, 1e-5, "context");
    EXPECT_CLOSE(gq, q.grad(), 1e-4, "d q");
    EXPECT_CLOSE(gkv, kv.grad(), 1e-4, "d kv");
  }
  EXPECT_THROW(attention::sdpa_fused_cross(Tensor::zeros({2, 4, 8}), Tensor::zeros({2, 5, 8}), 2, {}), std::invalid_argument);
}

// MultiHeadAttention's cross path (two GEMMs, sdpa_fused_cross) against its
// materialising path: output and every gradient; key = value = memory.
TEST(TransformerCross, MultiHeadCrossMatchesMaterialized) {
  Rng rng(4);
  nn::MultiHeadAttention mha(nn::MultiHeadAttentionOptions(16, 4), rng);
  for (auto& [name, p] : mha.named_parameters())
    if (p.dim() == 1) p.copy_from(randn(p.shape(), rng, 0.3f));  // non-zero biases
  Tensor x = randn({2, 20, 16}, rng).set_requires_grad(), mem = randn({2, 27, 16}, rng).set_requires_grad();
  Tensor r = randn({2, 20, 16}, rng);
  attention::Mask mask;
  mask.key_lengths = Tensor::from({27.0f, 11.0f}, {2});
  std::vector<Tensor> res[2];
  for (int path = 0; path < 2; ++path) {
    mha.options.kernel = path ? attention::Kernel::Materialized : attention::Kernel::Fused;
    mha.zero_grad(), x.zero_grad(), mem.zero_grad();
    Tensor y = mha.forward(x, mem, mem, mask).context;
    backward(sum_all(mul(y, r)));
    res[path] = {y, x.grad().clone(), mem.grad().clone()};
    for (auto& [name, p] : mha.named_parameters()) res[path].push_back(p.grad().clone());
  }
  ASSERT_EQ(res[0].size(), 7u);
  for (size_t i = 0; i < res[0].size(); ++i) EXPECT_CLOSE(res[0][i], res[1][i], 1e-4, "tensor " + std::to_string(i));
}

// The parameter names and shapes are PyTorch's (state dicts map one to one).
TEST(TransformerLayers, ParameterNamesAndShapesAreTorchs) {
  Rng rng(1);
  nn::TransformerDecoder dec(nn::TransformerStackOptions(nn::TransformerLayerOptions(8, 2).set_dim_feedforward(12), 2), rng);
  auto named = dec.named_parameters();
  ASSERT_EQ(named.size(), 2u * 18u + 2u);
  EXPECT_EQ(named[0].first, "layers.0.self_attn.in_proj_weight");
  EXPECT_EQ(named[0].second.shape(), (Shape{24, 8}));
  EXPECT_EQ(dec.parameter("layers.1.multihead_attn.in_proj_weight").shape(), (Shape{24, 8}));
  EXPECT_EQ(dec.parameter("layers.1.linear1.weight").shape(), (Shape{12, 8}));
  EXPECT_EQ(dec.parameter("layers.1.linear2.weight").shape(), (Shape{8, 12}));
  EXPECT_EQ(dec.parameter("layers.1.norm3.bias").shape(), (Shape{8}));
  EXPECT_EQ(named.back().first, "norm.bias");  // pre-norm: the final norm
  nn::TransformerEncoder post(
      nn::TransformerStackOptions(nn::TransformerLayerOptions(8, 2).set_dim_feedforward(12).set_norm_first(false), 1), rng);
  EXPECT_EQ(post.named_parameters().size(), 12u);  // post-norm: no final norm by default
  EXPECT_THROW(nn::TransformerEncoderLayer(nn::TransformerLayerOptions(10, 4), rng), std::invalid_argument);
}

// Training mode draws dropout masks (outputs differ from eval); eval is
// deterministic and equal to a model built without dropout.
TEST(TransformerLayers, DropoutOnlyInTraining) {
  Rng r1(3), r2(3);
  auto opt = nn::TransformerLayerOptions(16, 4).set_dim_feedforward(32);
  nn::TransformerDecoderLayer with(nn::TransformerLayerOptions(opt).set_dropout(0.3f), r1);
  nn::TransformerDecoderLayer without(nn::TransformerLayerOptions(opt).set_dropout(0.0f), r2);
  for (auto& [name, p] : without.named_parameters()) p.copy_from(with.parameter(name));
  Rng rng(9);
  Tensor x = randn({2, 18, 16}, rng), mem = randn({2, 23, 16}, rng);
  NoGradGuard ng;
  Tensor train_y = with.forward(x, mem);
  with.train(false);
  EXPECT_GT(max_rel_diff(train_y, with.forward(x, mem)), 1e-2);
  EXPECT_LT(max_rel_diff(with.forward(x, mem), without.forward(x, mem)), 1e-6);
  EXPECT_EQ(with.named_rngs().size(), 6u);  // self_attn, multihead_attn, dropout, dropout1..3
}

// Learned positions: x + weight[start : start + L], the gradient summed over the batch.
TEST(TransformerLayers, LearnedPositionalEmbedding) {
  Rng rng(2);
  nn::LearnedPositionalEmbedding pe(6, 10, 0.0f, rng);
  Tensor x = randn({2, 3, 6}, rng);
  Tensor y = pe.forward(x, 4);
  ASSERT_EQ(y.shape(), (Shape{2, 3, 6}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 18; ++i) EXPECT_EQ(y.data()[b * 18 + i], x.data()[b * 18 + i] + pe.weight.data()[24 + i]);
  backward(sum_all(y));
  for (int64_t i = 0; i < 60; ++i) EXPECT_EQ(pe.weight.grad().data()[i], i >= 24 && i < 42 ? 2.0f : 0.0f) << i;
  EXPECT_THROW(pe.forward(x, 8), std::invalid_argument);
}

// The vectorised exact GELU (kernels/activation.h) against the erf formula in
// double, and its slope against Phi + x phi: absolute error within a few 1e-7
// of the value's scale, over the range a pre-activation takes and beyond.
TEST(TransformerGelu, MatchesErfFormula) {
  const int64_t n = 4001;
  Tensor x = Tensor::empty({n});
  for (int64_t i = 0; i < n; ++i) x.data()[i] = -10.0f + 20.0f * float(i) / float(n - 1);
  x.set_requires_grad();
  Tensor y = gelu(x);
  backward(sum_all(y));
  double worst_y = 0, worst_d = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = x.data()[i], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    worst_y = std::max(worst_y, std::fabs(y.data()[i] - v * cdf) / std::max(1.0, std::fabs(v)));
    worst_d = std::max(worst_d, std::fabs(x.grad().data()[i] - (cdf + v * pdf)));
  }
  std::printf("  gelu: max |error| / max(1, |x|) %.2e, slope max |error| %.2e\n", worst_y, worst_d);
  EXPECT_LT(worst_y, 5e-7);
  EXPECT_LT(worst_d, 5e-7);
}

// The counter-based dropout: about p of the elements dropped, the rest scaled by
// 1/(1-p); the same seed gives the same pattern, another seed another; the
// gradient is the output's pattern; each element is kept exactly when the
// defining hash (dropout_draw of the row's key) says so, in every ISA build.
TEST(TransformerDropout, HashedPatternRateAndGradient) {
  Rng rng(3);
  Tensor x = Tensor::ones({64, 1000}).set_requires_grad();
  Tensor a = dropout_hashed(x, 0.3f, 42), b = dropout_hashed(x, 0.3f, 42), c = dropout_hashed(x, 0.3f, 43);
  int64_t dropped = 0, same = 0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    ASSERT_TRUE(a.data()[i] == 0.0f || std::fabs(a.data()[i] - 1.0f / 0.7f) < 1e-6f) << i;
    dropped += a.data()[i] == 0.0f;
    same += a.data()[i] == c.data()[i];
    const uint32_t key = attention::detail::dropout_row_key(42, uint64_t(i / 1000));
    const bool keep = attention::detail::dropout_draw(key, uint64_t(i % 1000)) >= attention::detail::dropout_threshold(0.3f);
    ASSERT_EQ(a.data()[i] != 0.0f, keep) << i;
  }
  EXPECT_NEAR(double(dropped) / double(a.numel()), 0.3, 0.01);
  EXPECT_LT(same, a.numel() * 0.7);  // independent patterns agree on ~0.3^2 + 0.7^2 = 58%
  EXPECT_EQ(max_rel_diff(a, b), 0.0);
  backward(sum_all(a));
  EXPECT_EQ(max_rel_diff(x.grad(), a), 0.0);
  EXPECT_THROW(dropout_hashed(x, 1.0f, 1), std::invalid_argument);
}

// The layers on the real positions alone (forward_rows, what the Transformer
// model trains with) equal the padded layers at every real position, with the
// same gradients for the inputs and every parameter (the padded loss weighs its
// padding by 0), pre- and post-norm, an encoder under a decoder.
TEST(TransformerLayers, RowsFormEqualsPaddedForm) {
  for (bool pre : {true, false}) {
    SCOPED_TRACE(pre ? "pre-norm" : "post-norm");
    Rng rng(12);
    const nn::TransformerStackOptions o(nn::TransformerLayerOptions(16, 4).set_dim_feedforward(24).set_dropout(0.0f).set_norm_first(pre), 2);
    nn::TransformerEncoder enc(o, rng);
    nn::TransformerDecoder dec(o, rng);
    const PaddedRows src = padded_rows({9, 4, 1}, 9), tgt = padded_rows({7, 3, 5}, 7);
    const Tensor x0 = randn({3, 7, 16}, rng), m0 = randn({3, 9, 16}, rng);
    const Tensor r = unpack_padded(pack_padded(randn({3, 7, 16}, rng), tgt), tgt);  // 0 at the padding
    Tensor x = x0.clone().set_requires_grad(), m = m0.clone().set_requires_grad();
    const Tensor y = dec.forward(x, enc.forward(m, src.lengths_tensor), src.lengths_tensor, tgt.lengths_tensor);
    backward(sum_all(mul(y, r)));
    std::vector<Tensor> padded_grads;  // encoder's parameters, then the decoder's
    for (nn::Module* mod : {static_cast<nn::Module*>(&enc), static_cast<nn::Module*>(&dec)})
      for (auto& [name, p] : mod->named_parameters()) {
        padded_grads.push_back(p.grad().clone());
        p.zero_grad();
      }

    Tensor xr = x0.clone().set_requires_grad(), mr = m0.clone().set_requires_grad();
    const Tensor yr = dec.forward_rows(pack_padded(xr, tgt), tgt, enc.forward_rows(pack_padded(mr, src), src), src);
    ASSERT_EQ(yr.shape(), (Shape{15, 16}));
    backward(sum_all(mul(yr, pack_padded(r, tgt))));
    EXPECT_CLOSE(unpack_padded(yr, tgt), mul(y, unpack_padded(pack_padded(Tensor::ones({3, 7, 16}), tgt), tgt)), 1e-5, "output");
    EXPECT_CLOSE(xr.grad(), x.grad(), 1e-4, "g_x");
    EXPECT_CLOSE(mr.grad(), m.grad(), 1e-4, "g_memory");
    size_t i = 0;
    for (nn::Module* mod : {static_cast<nn::Module*>(&enc), static_cast<nn::Module*>(&dec)})
      for (auto& [name, p] : mod->named_parameters()) EXPECT_CLOSE(p.grad(), padded_grads[i++], 1e-4, "g." + name);
  }
}

// Asking for the weights (attn explain) takes the materialising path: the same
// output as the fused one, per-head weights [B, H, Lq, Lk] whose rows sum to 1
// over the visible keys and are 0 on the hidden ones (causal, source padding).
TEST(TransformerLayers, WeightsOnRequestMatchFusedPath) {
  Rng rng(8);
  nn::TransformerDecoder dec(nn::TransformerStackOptions(nn::TransformerLayerOptions(16, 4).set_dim_feedforward(24), 2), rng);
  dec.train(false);
  Tensor x = randn({2, 18, 16}, rng), mem = randn({2, 21, 16}, rng);
  Tensor src_len = Tensor::from({21.0f, 9.0f}, {2});
  NoGradGuard ng;
  std::vector<nn::TransformerLayerWeights> w;
  Tensor with = dec.forward(x, mem, src_len, Tensor(), &w);
  EXPECT_CLOSE(with, dec.forward(x, mem, src_len), 1e-5, "output");
  ASSERT_EQ(w.size(), 2u);
  for (const auto& lw : w) {
    ASSERT_EQ(lw.self_attn.shape(), (Shape{2, 4, 18, 18}));
    ASSERT_EQ(lw.multihead_attn.shape(), (Shape{2, 4, 18, 21}));
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < 4; ++h)
        for (int64_t i = 0; i < 18; ++i) {
          const float* sr = lw.self_attn.data() + ((b * 4 + h) * 18 + i) * 18;
          const float* cr = lw.multihead_attn.data() + ((b * 4 + h) * 18 + i) * 21;
          double ssum = 0, csum = 0;
          for (int64_t j = 0; j < 18; ++j) {
            ssum += sr[j];
            if (j > i) EXPECT_EQ(sr[j], 0.0f) << "causal";
          }
          for (int64_t j = 0; j < 21; ++j) {
            csum += cr[j];
            if (j >= int64_t(src_len.data()[b])) EXPECT_EQ(cr[j], 0.0f) << "source padding";
          }
          EXPECT_NEAR(ssum, 1.0, 1e-5);
          EXPECT_NEAR(csum, 1.0, 1e-5);
        }
  }
}

}  // namespace
}  // namespace attn::testing::transformer_layers_test
