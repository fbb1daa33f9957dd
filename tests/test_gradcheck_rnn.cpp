// Finite-difference gradient checks of the fused "gru" and "lstm" ops: every
// element of every input (x, h0, c0, weight_ih, weight_hh, bias_ih, bias_hh),
// both directions, padded batches with unsorted lengths and empty sequences.
//
// Loss: a fixed random projection of all outputs, accumulated in double:
//   L = sum(y * Ry) + sum(h_n * Rh) (+ sum(c_n * Rc))
// Central differences with step 2e-3 on float32 inputs: the outputs carry
// ~3e-8 rounding each, so the quotient's noise is ~1e-4; tolerance
// |numeric - analytic| <= 1e-2 |analytic| + 5e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <string>
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/nn/rnn.h"

using namespace attn;

namespace {

struct GradCase {
  const char* name;
  bool lstm;
  RnnDirection direction;
  std::vector<int64_t> lengths;  // batch = lengths.size(), seq_len = 4
  bool with_state;               // h0 (c0) given, else undefined = zeros
  bool with_bias;
};

void PrintTo(const GradCase& c, std::ostream* os) { *os << c.name; }

class RnnGradcheck : public ::testing::TestWithParam<GradCase> {};

double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += double(a.data()[i]) * double(b.data()[i]);
  return s;
}

TEST_P(RnnGradcheck, MatchesFiniteDifferences) {
  const GradCase& c = GetParam();
  const int64_t B = int64_t(c.lengths.size()), T = 4, I = 2, H = 3, G = c.lstm ? 4 : 3;
  Rng rng(1234);
  auto leaf = [&](const Shape& s) { return rand_uniform(s, rng, -1.0f, 1.0f).set_requires_grad(); };
  Tensor x = leaf({B, T, I});
  Tensor h0 = c.with_state ? leaf({B, H}) : Tensor();
  Tensor c0 = c.with_state && c.lstm ? leaf({B, H}) : Tensor();
  RnnWeights w{leaf({G * H, I}), leaf({G * H, H}), c.with_bias ? leaf({G * H}) : Tensor(),
               c.with_bias ? leaf({G * H}) : Tensor()};
  Tensor ry = randn({B, T, H}, rng), rh = randn({B, H}, rng), rc = randn({B, H}, rng);

  // the op's outputs as {y, h_n, c_n}
  auto run = [&]() -> std::vector<Tensor> {
    if (c.lstm) {
      LstmResult r = lstm(x, c.lengths, h0, c0, w, c.direction);
      return {r.output, r.h_n, r.c_n};
    }
    GruResult r = gru(x, c.lengths, h0, w, c.direction);
    return {r.output, r.h_n};
  };
  auto loss_double = [&]() {
    NoGradGuard ng;
    std::vector<Tensor> o = run();
    return dot(o[0], ry) + dot(o[1], rh) + (c.lstm ? dot(o[2], rc) : 0.0);
  };

  std::vector<Tensor> o = run();
  Tensor loss = add(sum_all(mul(o[0], ry)), sum_all(mul(o[1], rh)));
  if (c.lstm) loss = add(loss, sum_all(mul(o[2], rc)));
  backward(loss);

  std::vector<std::pair<std::string, Tensor>> inputs = {{"x", x}, {"weight_ih", w.weight_ih}, {"weight_hh", w.weight_hh}};
  if (c.with_bias) inputs.insert(inputs.end(), {{"bias_ih", w.bias_ih}, {"bias_hh", w.bias_hh}});
  if (c.with_state) inputs.push_back({"h0", h0});
  if (c.with_state && c.lstm) inputs.push_back({"c0", c0});

  const float eps = 2e-3f;
  int checked = 0;
  for (auto& [name, t] : inputs) {
    ASSERT_TRUE(t.grad().defined()) << name;
    ASSERT_EQ(t.grad().shape(), t.shape()) << name;
    for (int64_t i = 0; i < t.numel(); ++i) {
      float keep = t.data()[i];
      t.data()[i] = keep + eps;
      double lp = loss_double();
      t.data()[i] = keep - eps;
      double lm = loss_double();
      t.data()[i] = keep;
      double numeric = (lp - lm) / (2.0 * double(eps));
      double analytic = t.grad().data()[i];
      EXPECT_LE(std::fabs(numeric - analytic), 1e-2 * std::fabs(analytic) + 5e-4)
          << name << "[" << i << "]: numeric " << numeric << " analytic " << analytic;
      ++checked;
    }
  }
  EXPECT_GT(checked, 0);
}

std::string case_name(const ::testing::TestParamInfo<GradCase>& info) { return info.param.name; }

using D = RnnDirection;
INSTANTIATE_TEST_SUITE_P(
    Ops, RnnGradcheck,
    ::testing::Values(
        //       name                    lstm   direction    lengths    state  bias
        GradCase{"GruForwardPadded", false, D::Forward, {4, 2, 3}, true, true},
        GradCase{"GruReversePadded", false, D::Reverse, {4, 2, 3}, true, true},
        GradCase{"GruReverseEmptyRow", false, D::Reverse, {1, 0, 3}, false, true},
        GradCase{"GruForwardNoBias", false, D::Forward, {3, 4}, true, false},
        GradCase{"LstmForwardPadded", true, D::Forward, {4, 2, 3}, true, true},
        GradCase{"LstmReversePadded", true, D::Reverse, {4, 2, 3}, true, true},
        GradCase{"LstmForwardEmptyRow", true, D::Forward, {0, 4, 1}, true, true},
        GradCase{"LstmReverseNoState", true, D::Reverse, {2, 3, 4}, false, true}),
    case_name);

}  // namespace
