// The fused Luong decoder loop (models/luong_decoder.h): finite-difference
// gradients of the op, and the whole model's teacher-forced features and every
// parameter gradient equal to the composable step-by-step loop
// (Luong::forced_features_by_steps) for every cell, score and window, with
// padding, one and two layers, with and without dropout.
#include <gtest/gtest.h>

#include <string>

#include "attn/models/luong/luong.h"
#include "attn/models/luong/luong_decoder.h"
#include "compare.h"
#include "gradcheck.h"
#include "tiny_models.h"

namespace attn::testing::luong_decoder_test {
namespace {
using models::CellType;
using models::LuongScore;
using models::LuongWindow;
using T = std::vector<Tensor>;

// Dropout-like masks [n...]: 0 or 2 in a fixed pattern.
Tensor pattern_mask(const Shape& s) {
  Tensor m = Tensor::empty(s);
  for (int64_t i = 0; i < m.numel(); ++i) m.data()[i] = (i * 7 + 3) % 5 == 0 ? 0.0f : 2.0f;
  return m;
}

// x: emb [3,2,3], keys, values, h0 (L of them), c0 (LSTM), per layer w_ih, w_hh, b_ih, b_hh, then `tail`
// (concat: W_q, v; local-p: W_p, v_p), then W_c. Lengths 4 and 2.
Tensor run_loop(const T& x, CellType cell, LuongScore score, LuongWindow window, int64_t L, bool masks) {
  models::LuongLoopInputs in;
  models::LuongLoopWeights w;
  size_t i = 0;
  in.emb = x[i++], in.keys = x[i++], in.values = x[i++];
  in.lengths = Tensor::from({4.0f, 2.0f}, {2});
  for (int64_t l = 0; l < L; ++l) in.h0.push_back(x[i++]);
  if (cell == CellType::Lstm)
    for (int64_t l = 0; l < L; ++l) in.c0.push_back(x[i++]);
  w.cell = cell, w.score = score, w.window = window, w.half_width = 1;
  for (int64_t l = 0; l < L; ++l, i += 4) w.layers.push_back({x[i], x[i + 1], x[i + 2], x[i + 3]});
  if (score == LuongScore::Concat) w.concat_q = x[i++], w.concat_v = x[i++];
  if (window == LuongWindow::LocalP) w.local_wp = x[i++], w.local_vp = x[i++];
  w.combine = x[i++];
  const int64_t Hd = in.h0[0].size(1);
  if (masks) {
    if (L > 1) in.layer_masks = pattern_mask({3, L - 1, 2, Hd});
    in.feed_masks = pattern_mask({3, 2, Hd});
  }
  return models::luong_decoder(in, w);
}

// T 3, B 2, E 3, S 4, Hd 4, Dv 3, A 3
ATTN_GRADCHECK_CASE({"luong_decoder", "LSTM, 2 layers, general, local-p, dropout masks",
                     {{3, 2, 3}, {2, 4, 4}, {2, 4, 3}, {2, 4}, {2, 4}, {2, 4}, {2, 4},
                      {16, 7}, {16, 4}, {16}, {16}, {16, 4}, {16, 4}, {16}, {16}, {3, 4}, {3}, {4, 7}},
                     [](const T& x) { return run_loop(x, CellType::Lstm, LuongScore::General, LuongWindow::LocalP, 2, true); }});
ATTN_GRADCHECK_CASE({"luong_decoder", "GRU, concat, global",
                     {{3, 2, 3}, {2, 4, 3}, {2, 4, 3}, {2, 4}, {12, 7}, {12, 4}, {12}, {12}, {3, 4}, {3}, {4, 7}},
                     [](const T& x) { return run_loop(x, CellType::Gru, LuongScore::Concat, LuongWindow::Global, 1, false); },
                     [](T& x) {  // N(0, 1) / 2: with N(0, 1) weights the tanh saturate and the central
                       for (Tensor& t : x)  // difference's own error reached 9%
                         for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] *= 0.5f;
                     }});
ATTN_GRADCHECK_CASE({"luong_decoder", "GRU, 2 layers, dot, local-m (windows past the short source: empty)",
                     {{3, 2, 3}, {2, 4, 4}, {2, 4, 4}, {2, 4}, {2, 4},
                      {12, 7}, {12, 4}, {12}, {12}, {12, 4}, {12, 4}, {12}, {12}, {4, 8}},
                     [](const T& x) { return run_loop(x, CellType::Gru, LuongScore::Dot, LuongWindow::LocalM, 2, true); }});

std::vector<LuongVariant> loop_variants() {
  std::vector<LuongVariant> v = luong_variants(true);
  for (LuongVariant& x : v) x.config.dropout = 0.3;  // training mode: the masks must match
  return v;
}

class LuongLoop : public ::testing::TestWithParam<LuongVariant> {};

// Two models from the same seeds, in training mode (dropout 0.3: the fused op
// must get the masks the steps draw) and in eval mode: the features and every
// parameter's gradient of sum(features * R).
TEST_P(LuongLoop, FusedEqualsSteps) {
  const models::ModelConfig& c = GetParam().config;
  const data::Seq2SeqBatch b = tiny_batch(c.src_vocab, c.tgt_vocab);
  for (bool training : {true, false}) {
    Rng i1(5), i2(5);
    auto fused = models::make_model(c, i1, 9), steps = models::make_model(c, i2, 9);
    fused->train(training), steps->train(training);
    Tensor f = fused->forced_features(b);
    Tensor s = dynamic_cast<const models::Luong&>(*steps).forced_features_by_steps(b);
    ASSERT_EQ(f.shape(), s.shape());
    EXPECT_NORMWISE_CLOSE(f, s, 1e-5, "features");
    Rng r(3);
    Tensor R = randn(f.shape(), r);
    backward(sum_all(mul(f, R)));
    backward(sum_all(mul(s, R)));
    auto pf = fused->named_parameters(), ps = steps->named_parameters();
    ASSERT_EQ(pf.size(), ps.size());
    for (size_t k = 0; k < pf.size(); ++k) {
      const Tensor &gf = pf[k].second.grad(), &gs = ps[k].second.grad();
      ASSERT_EQ(gf.defined(), gs.defined()) << pf[k].first;
      // 3e-4, not 1e-4: concat's query gradient is a softmax backward, a * (g - a.g),
      // that cancels to ~1e-5 of its terms; summed in another order (the fused
      // op's scalar kernels against the steps' BLAS) its relative difference was
      // 1.6e-4 at ATTN_ISA=scalar (lstm_concat_2layers). A dropped term is O(1).
      if (gf.defined()) EXPECT_NORMWISE_CLOSE(gf, gs, 3e-4, (pf[k].first + (training ? " (training)" : " (eval)")).c_str());
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, LuongLoop, ::testing::ValuesIn(loop_variants()),
                         [](const ::testing::TestParamInfo<LuongVariant>& i) { return i.param.name; });

TEST(LuongLoop, BadShapesAreNamed) {
  Rng r(1);
  models::LuongLoopInputs in;
  models::LuongLoopWeights w;
  in.emb = randn({3, 2, 3}, r), in.keys = randn({2, 4, 4}, r), in.values = randn({2, 4, 4}, r);
  in.lengths = Tensor::from({4.0f, 2.0f}, {2});
  in.h0 = {randn({2, 4}, r)};
  w.cell = CellType::Gru, w.score = LuongScore::Dot;
  w.layers = {{randn({12, 7}, r), randn({12, 4}, r), Tensor(), Tensor()}};
  w.combine = randn({4, 8}, r);
  EXPECT_NO_THROW(models::luong_decoder(in, w));
  w.combine = randn({4, 7}, r);
  try {
    models::luong_decoder(in, w);
    FAIL() << "W_c [4, 7] for Dv + Hd = 8 was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("W_c [4, 7]"), std::string::npos) << e.what();
  }
  w.combine = randn({4, 8}, r);
  in.lengths = Tensor::from({5.0f, 2.0f}, {2});  // beyond S
  EXPECT_THROW(models::luong_decoder(in, w), std::invalid_argument);
}

}  // namespace
}  // namespace attn::testing::luong_decoder_test
