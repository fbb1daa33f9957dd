// The additive decoder step (additive_step.h) against a plain double loop
// (attention_reference.h) that shares none of its kernels: both query
// projections (BLAS below kLanes and above 128 rows, the register tile in
// between) run the same score backward, so comparing them with each other
// could not see a bug there. Also at scores of +-1e3 .. 1e4, where a softmax
// without max-subtraction overflows.
#include <gtest/gtest.h>

#include <cmath>

#include "attention_reference.h"
#include "attn/attention/additive_step.h"
#include "attn/autograd/ops.h"
#include "attn/cpu/isa.h"
#include "attn/tensor/random.h"
#include "compare.h"

namespace attn::testing::attention_reference_test {
namespace {

struct AdditiveCase {
  const char* label;
  int64_t B;
  float v_scale = 1.0f;  // v ~ N(0, v_scale^2): scores spread over ~v_scale sqrt(A)
  float shift = 0.0f;    // adds `shift` to every score (through unit 0, see below)
  double tol = 2e-4;     // observed: ~3e-5 at scores of O(1)
  bool one_hot = false;  // scores far apart: gradients only checked to be finite (see below)
  // tol under the scalar build (cpu::isa() == scalar), when it must differ: see the cases
  double scalar_tol = 0.0;
};

const AdditiveCase kAdditiveCases[] = {
    {"blas_below_lanes", 5},
    {"register_tile", 40},
    {"blas_above_128_rows", 130},
    // a softmax without max-subtraction overflows (exp(1e3) = inf in float) or underflows to 0 / 0
    {"scores_shifted_up_1e3", 40, 1.0f, 1e3f, 2e-3},
    // float's ulp at 1e4 is 1e-3: a score carries a few 1e-3 of rounding, the weights as much relative.
    // The scalar build adds the A = 20 terms v_a tanh(.) one by one to a running sum of ~1e4 (19
    // roundings of up to 5e-4); the vector builds add them on 16 or 8 lanes, where the sum is that
    // large only in the reduction and the tail (7 or 8 roundings): seen 3.4e-2 under the scalar build
    // (where B = 5 runs the register tile), 5e-2 admits it there only.
    {"scores_shifted_down_1e4_blas", 5, 1.0f, -1e4f, 3e-2, false, 5e-2},
    {"scores_shifted_up_1e4_blas", 130, 1.0f, 1e4f, 3e-2, false, 5e-2},
    {"scores_spread_1e4", 40, 2e3f, 0.0f, 1e-2, true},
};

class AdditiveStepReference : public ::testing::TestWithParam<AdditiveCase> {};

// query [B, Qd], keys [B, Lk, Dk], values [B, Lk, Dv], W1 [A, Qd], W2 [A, Dk],
// bias [A], v [A]; lengths include 0, 1 and Lk. Context, weights and the
// gradients of all seven inputs against the double loop.
TEST_P(AdditiveStepReference, ContextWeightsAndGradients) {
  const AdditiveCase& c = GetParam();
  const int64_t B = c.B, Qd = 24, Lk = 13, Dk = 10, Dv = 9, A = 20;  // A = 20: vector lanes and a tail
  Rng rng(77 + uint64_t(B));
  Tensor query = randn({B, Qd}, rng), keys = randn({B, Lk, Dk}, rng), values = randn({B, Lk, Dv}, rng);
  Tensor W1 = randn({A, Qd}, rng, 0.3f), W2 = randn({A, Dk}, rng, 0.3f), bias = randn({A}, rng, 0.5f);
  Tensor v = randn({A}, rng, c.v_scale);
  if (c.shift != 0.0f) {
    // unit 0 sees only its bias: tanh(1) for every key, so every score gains v[0] tanh(1) = shift.
    // Its own parameters' gradients (dW1, dW2 row 0, dbias[0]) are sums over the keys of
    // v[0] (1 - tanh^2(1)) de_j, 0 in exact arithmetic (sum_j de_j = 0); float leaves
    // noise of ~eps |shift| there, so those rows are not compared.
    for (int64_t i = 0; i < Qd; ++i) W1.data()[i] = 0.0f;
    for (int64_t d = 0; d < Dk; ++d) W2.data()[d] = 0.0f;
    bias.data()[0] = 1.0f;
    v.data()[0] = float(double(c.shift) / std::tanh(1.0));
  }
  std::vector<int64_t> lengths(static_cast<size_t>(B));
  Tensor len = Tensor::empty({B});
  for (int64_t b = 0; b < B; ++b) {
    lengths[size_t(b)] = b == 0 ? Lk : b == 1 ? 0 : b == 2 ? 1 : 1 + int64_t(rng.below(uint64_t(Lk)));
    len.data()[b] = float(lengths[size_t(b)]);
  }
  Tensor dctx = randn({B, Dv}, rng), dw = randn({B, Lk}, rng);

  std::vector<Tensor> in = {query, keys, values, W1, W2, bias, v};
  for (Tensor& t : in) t = t.clone().set_requires_grad(true);
  attention::AdditiveStepOutput o =
      attention::additive_step(in[0], attention::project_keys(in[1], in[4], in[5]), in[2], in[3], in[6], len);
  backward(add(sum_all(mul(o.context, dctx)), sum_all(mul(o.weights, dw))));

  const AdditiveReference r = additive_reference(query, keys, values, W1, W2, bias, v, lengths, dctx, dw);
  const double tol = cpu::isa() == cpu::Isa::scalar && c.scalar_tol > 0 ? c.scalar_tol : c.tol;
  // relative to each element, with a floor of 1e-2 of the tensor's scale
  EXPECT_REL_CLOSE(o.context, r.context, tol, 1e-2, 1e-6, "context");
  EXPECT_REL_CLOSE(o.weights, r.weights, tol, 1e-2, 1e-6, "weights");
  const Tensor* ref[] = {&r.dquery, &r.dkeys, &r.dvalues, &r.dW1, &r.dW2, &r.dbias, &r.dv};
  const char* names[] = {"dquery", "dkeys", "dvalues", "dW1", "dW2", "dbias", "dv"};
  for (size_t i = 0; i < in.size(); ++i) {
    Tensor got = in[i].grad(), want = *ref[i];
    if (c.one_hot) {
      // near-one-hot weights: de_j = w_j (da_j - sum_k w_k da_k) cancels in float to
      // ~eps |da|, times |v| ~ 1e3 - far above the exact (tiny) gradient. Finite is what can be asked.
      EXPECT_EQ(compare(got, got).nonfinite, 0) << names[i];
      continue;
    }
    if (c.shift != 0.0f && (i == 3 || i == 4 || i == 5)) {  // W1, W2, bias: rows 1.. (unit 0 is the shift)
      got = slice(got, 0, 1, A - 1), want = slice(want, 0, 1, A - 1);
    }
    EXPECT_REL_CLOSE(got, want, tol, 1e-2, 1e-6, names[i]);
  }
  // the checks can fail: the weights of a row sum to 1 (0 for the empty row)
  for (int64_t b = 0; b < B; ++b) {
    double sum = 0;
    for (int64_t j = 0; j < Lk; ++j) sum += o.weights.data()[b * Lk + j];
    EXPECT_NEAR(sum, lengths[size_t(b)] ? 1.0 : 0.0, 1e-5) << "row " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Paths, AdditiveStepReference, ::testing::ValuesIn(kAdditiveCases),
                         [](const ::testing::TestParamInfo<AdditiveCase>& i) { return std::string(i.param.label); });

}  // namespace
}  // namespace attn::testing::attention_reference_test
