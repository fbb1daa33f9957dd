// Properties of the attention functions that hold for any input.
#include <gtest/gtest.h>

#include <algorithm>

#include "attn/attention/attention.h"
#include "oracle.h"

namespace attn::testing::attention_properties_test {
namespace {
using namespace attn::attention;

// Self-attention without positional information is permutation-equivariant:
// permuting the positions of x permutes the outputs the same way
// (Vaswani et al. 2017, sec. 3.5: why positional encodings are needed).
TEST(AttentionProperties, SelfAttentionIsPermutationEquivariant) {
  Rng rng(17);
  const int64_t B = 2, L = 9, D = 8, A = 6;
  Tensor x = randn({B, 1, L, D}, rng);
  Tensor Wq = randn({D, D}, rng, 0.4f), Wk = randn({D, D}, rng, 0.4f), Wv = randn({D, D}, rng, 0.4f);
  std::vector<Score> scores = {Dot{}, ScaledDot{}, General{randn({D, D}, rng, 0.4f)},
                               Additive{randn({A, D}, rng), randn({A, D}, rng), randn({A}, rng), Tensor()},
                               Concat{randn({A, 2 * D}, rng), randn({A}, rng)}};
  for (int trial = 0; trial < 5; ++trial) {  // random permutations (Fisher-Yates on the test's Rng)
    std::vector<int64_t> perm(L);
    for (int64_t i = 0; i < L; ++i) perm[i] = i;
    do shuffle(perm, rng);
    while (std::is_sorted(perm.begin(), perm.end()));
    SCOPED_TRACE("permutation " + std::to_string(trial));
    Tensor xp = Tensor::empty(x.shape());
    for (int64_t b = 0; b < B; ++b)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t d = 0; d < D; ++d) xp.data()[(b * L + i) * D + d] = x.data()[(b * L + perm[i]) * D + d];
    for (size_t s = 0; s < scores.size(); ++s)
      for (Kernel kern : {s < 3 ? Kernel::Fused : Kernel::Auto, Kernel::Materialized}) {
        SCOPED_TRACE("score " + std::to_string(s) + (kern == Kernel::Materialized ? " materialized" : " fused/auto"));
        AttentionOptions o;
        o.kernel = kern;
        auto self = [&](const Tensor& in) {
          Tensor q = linear(in, Wq, Tensor()), k = linear(in, Wk, Tensor()), v = linear(in, Wv, Tensor());
          return attention::attention(q, k, v, scores[s], o).context;
        };
        Tensor y = self(x), yp = self(xp);
        Tensor y_permuted = Tensor::empty(y.shape());
        for (int64_t b = 0; b < B; ++b)
          for (int64_t i = 0; i < L; ++i)
            for (int64_t d = 0; d < D; ++d) y_permuted.data()[(b * L + i) * D + d] = y.data()[(b * L + perm[i]) * D + d];
        EXPECT_CLOSE(yp, y_permuted, 1e-5, "attention of permuted input vs permuted attention");
        // and the test is not vacuous: the output does depend on the order of rows
        EXPECT_GT(max_rel_diff(yp, y), 1e-2);
      }
  }
}

// Weights come back only on request, on every path: [B, H, Lq, Lk] when asked,
// undefined otherwise (the fused kernel never forms them).
TEST(AttentionProperties, WeightsOnlyOnRequest) {
  Rng rng(5);
  Tensor q = randn({2, 2, 20, 4}, rng), k = randn({2, 2, 7, 4}, rng), v = randn({2, 2, 7, 3}, rng);
  for (Kernel kern : {Kernel::Auto, Kernel::Fused, Kernel::Materialized}) {
    AttentionOptions o;
    o.kernel = kern;
    EXPECT_FALSE(attention::attention(q, k, v, ScaledDot{}, o).weights.defined());
  }
  AttentionOptions o;
  o.need_weights = true;
  for (Score sc : {Score(Dot{}), Score(ScaledDot{}), Score(General{randn({4, 4}, rng)})}) {
    AttentionOutput out = attention::attention(q, k, v, sc, o);
    ASSERT_TRUE(out.weights.defined());
    EXPECT_EQ(out.weights.shape(), Shape({2, 2, 20, 7}));
  }
  o.kernel = Kernel::Fused;  // the fused kernel cannot return them: an error, not a silent fallback
  EXPECT_THROW(attention::attention(q, k, v, ScaledDot{}, o), std::invalid_argument);
}

// Weights are a distribution over the visible keys: rows sum to 1 (0 when
// nothing is visible) and hidden keys get exactly 0.
TEST(AttentionProperties, WeightsAreMaskedDistributions) {
  Rng rng(3);
  Tensor q = randn({2, 2, 6, 4}, rng), k = randn({2, 2, 8, 4}, rng), v = randn({2, 2, 8, 3}, rng);
  AttentionOptions o;
  o.need_weights = true;
  o.mask.causal = true;
  o.mask.key_lengths = Tensor::from({5.0f, 0.0f}, {2});
  Tensor w = scaled_dot_product_attention(q, k, v, o).weights;
  ASSERT_EQ(w.shape(), (Shape{2, 2, 6, 8}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t i = 0; i < 6; ++i) {
        double s = 0;
        for (int64_t j = 0; j < 8; ++j) {
          float a = w.data()[((b * 2 + h) * 6 + i) * 8 + j];
          bool visible = j <= i && j < (b == 0 ? 5 : 0);
          if (!visible) EXPECT_EQ(a, 0.0f);
          s += a;
        }
        EXPECT_NEAR(s, b == 0 ? 1.0 : 0.0, 1e-5);
      }
}

// Local-m with a window wider than the source equals global attention.
TEST(AttentionProperties, WideLocalWindowIsGlobal) {
  Rng rng(4);
  Tensor q = randn({1, 1, 5, 4}, rng), k = randn({1, 1, 6, 4}, rng), v = randn({1, 1, 6, 3}, rng);
  AttentionOptions g, l;
  g.kernel = Kernel::Materialized;
  l.local.window = Window::LocalMonotonic;
  l.local.half_width = 100;
  EXPECT_CLOSE(scaled_dot_product_attention(q, k, v, l).context, scaled_dot_product_attention(q, k, v, g).context, 1e-6,
               "local-m with a huge window vs global");
  l.local.half_width = 0;  // only key j = i: the context is v_i
  Tensor c = scaled_dot_product_attention(q, k, v, l).context;
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t d = 0; d < 3; ++d) EXPECT_FLOAT_EQ(c.data()[i * 3 + d], v.data()[i * 3 + d]);
}

}  // namespace
}  // namespace attn::testing::attention_properties_test
