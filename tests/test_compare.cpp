// The comparison helper every test relies on (compare.h): a NaN anywhere, or an
// Inf on one side only, must fail, wherever it stands in the tensor and
// whichever side has it; finite differences come out exactly.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "compare.h"

namespace attn::testing::compare_test {
namespace {

const float kNaNf = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();
const double kEps = std::numeric_limits<float>::epsilon();

// Every way compare() reports: relative, absolute and normwise.
void expect_fails(const std::vector<float>& a, const std::vector<float>& b, const char* what) {
  for (double floor : {0.0, 1.0}) {
    const Diff d = compare(a, b, 1e-2, floor);
    EXPECT_TRUE(std::isnan(d.max_rel)) << what << ": max_rel " << d.max_rel;
    EXPECT_TRUE(std::isnan(d.max_abs)) << what << ": max_abs " << d.max_abs;
    EXPECT_TRUE(std::isnan(d.normwise())) << what;
    EXPECT_GE(d.nonfinite, 1) << what;
    EXPECT_FALSE(d.max_rel <= 1e30) << what;  // what EXPECT_LE(max_rel, tol) sees
  }
}

TEST(Compare, NaNFailsWhereverItIs) {
  expect_fails({kNaNf, 1, 2, 3}, {0, 1, 2, 3}, "NaN first");
  expect_fails({0, 1, 2, kNaNf}, {0, 1, 2, 3}, "NaN last");
  expect_fails({0, kNaNf, 2, 3}, {0, 1, 2, 3}, "NaN in the middle, then finite differences");
  expect_fails({5, 1, 2, 3}, {0, 1, kNaNf, 3}, "NaN in the reference");
  expect_fails({0, 1, kNaNf, 3}, {0, 1, kNaNf, 3}, "NaN on both sides at the same place");
  expect_fails({kNaNf}, {kNaNf}, "one element, NaN");
  // a large finite difference after the NaN does not replace it
  expect_fails({kNaNf, 1e6f}, {0, 0}, "NaN then a large difference");
}

TEST(Compare, InfOnOneSideFailsTheSameInfIsEqual) {
  expect_fails({kInf, 1}, {1, 1}, "Inf in the result");
  expect_fails({1, 1}, {1, -kInf}, "Inf in the reference");
  expect_fails({1, kInf}, {1, -kInf}, "opposite Infs");
  const Diff same = compare(std::vector<float>{1, kInf, -kInf}, std::vector<float>{1, kInf, -kInf});
  EXPECT_EQ(same.max_rel, 0.0);
  EXPECT_EQ(same.max_abs, 0.0);
  EXPECT_EQ(same.nonfinite, 0);
}

TEST(Compare, FiniteDifferencesAndFloors) {
  // |1.5 - 1| / 1 = 0.5 (element 1), |4 - 2| / 2 = 1 (element 2, also the largest
  // absolute), less the rounding allowance of 16 ulp of the scale 8
  const Diff d = compare(std::vector<float>{0, 1.5f, 4, -8}, std::vector<float>{0, 1, 2, -8});
  EXPECT_DOUBLE_EQ(d.rounding, kRoundingUlps * kEps * 8);
  EXPECT_DOUBLE_EQ(d.max_rel, (2 - d.rounding) / 2);
  EXPECT_DOUBLE_EQ(d.max_abs, 2.0);
  EXPECT_DOUBLE_EQ(d.scale, 8.0);
  EXPECT_DOUBLE_EQ(d.normwise(), 0.25);
  EXPECT_EQ(d.worst, 2);
  EXPECT_EQ(d.worst_abs, 2);
  // reference 0, result not: infinite without a floor, judged against the floor with one
  EXPECT_EQ(compare(std::vector<float>{0.5f}, std::vector<float>{0}).max_rel, std::numeric_limits<double>::infinity());
  EXPECT_DOUBLE_EQ(compare(std::vector<float>{0.5f}, std::vector<float>{0}, 0.0, 2.0).max_rel, 0.25);
  // floor = rel_floor * max|b| = 0.1 * 10 = 1: (|1 - 0| - rounding) / (0 + 1)
  EXPECT_DOUBLE_EQ(compare(std::vector<float>{1, 10}, std::vector<float>{0, 10}, 0.1, 0.0).max_rel,
                   1.0 - kRoundingUlps * kEps * 10);
  // equal inputs: 0, also where the reference is 0
  EXPECT_EQ(compare(std::vector<float>{0, 3}, std::vector<float>{0, 3}).max_rel, 0.0);
}

TEST(Compare, ShapeMismatchFails) {
  Diff d;
  EXPECT_NONFATAL_FAILURE(d = compare(Tensor::zeros({2, 3}), Tensor::zeros({3, 2})), "shape");
  EXPECT_TRUE(std::isnan(d.max_rel));
}

TEST(Compare, RunningMaximumKeepsNaN) {
  EXPECT_TRUE(std::isnan(nan_max(1.0, kNaN)));
  EXPECT_TRUE(std::isnan(nan_max(kNaN, 1.0)));
  EXPECT_TRUE(std::isnan(nan_min(-1.0, kNaN)));
  EXPECT_TRUE(std::isnan(nan_min(kNaN, -1.0)));
  EXPECT_EQ(nan_max(1.0, 2.0), 2.0);
  EXPECT_EQ(nan_min(1.0, 2.0), 1.0);
  // the gradient check's reduction: a NaN anywhere in the sequence stays the worst
  for (size_t at = 0; at < 4; ++at) {
    std::vector<double> seq = {0.5, 3.0, 0.1, 2.0};
    seq[at] = kNaN;
    double worst = 0;
    size_t where = 99;
    for (size_t i = 0; i < seq.size(); ++i)
      if (raise_worst(worst, seq[i])) where = i;
    EXPECT_TRUE(std::isnan(worst)) << "NaN at " << at;
    EXPECT_EQ(where, at) << "the NaN's place is reported";
  }
  double worst = 0;
  EXPECT_TRUE(raise_worst(worst, 1.0));
  EXPECT_FALSE(raise_worst(worst, 0.5));
  EXPECT_TRUE(raise_worst(worst, 2.0));
  EXPECT_EQ(worst, 2.0);
}

// The macros fail on NaN (and pass on close values).
TEST(Compare, MacrosFailOnNaN) {
  static const Tensor ref = Tensor::from({1.0f, 2.0f, 3.0f}, {3});
  static const Tensor nan_first = Tensor::from({kNaNf, 2.0f, 3.0f}, {3});
  static const Tensor nan_last = Tensor::from({1.0f, 2.0f, kNaNf}, {3});
  EXPECT_NONFATAL_FAILURE(EXPECT_REL_CLOSE(nan_first, ref, 1e-3, 0.0, 0.0, "first"), "max relative difference nan");
  EXPECT_NONFATAL_FAILURE(EXPECT_REL_CLOSE(nan_last, ref, 1e-3, 0.0, 0.0, "last"), "max relative difference nan");
  EXPECT_NONFATAL_FAILURE(EXPECT_REL_CLOSE(ref, nan_last, 1e-3, 0.0, 0.0, "reference"), "nan");
  EXPECT_NONFATAL_FAILURE(EXPECT_NORMWISE_CLOSE(nan_first, ref, 1e-3, "first"), "nan");
  EXPECT_NONFATAL_FAILURE(EXPECT_NORMWISE_CLOSE(ref, nan_last, 1e-3, "reference"), "nan");
  EXPECT_REL_CLOSE(Tensor::from({1.0f, 2.0f, 3.0001f}, {3}), ref, 1e-4, 0.0, 0.0, "close");
  EXPECT_NORMWISE_CLOSE(Tensor::from({1.0f, 2.0f, 3.0001f}, {3}), ref, 1e-4, "close");
}

// The absolute floor of compare.h (Diff::rounding): rounding passes, a planted
// error a hundred times smaller than the tolerance allows on the largest
// element still fails, and so does a NaN beside rounding.
TEST(Compare, RoundingFloorPassesRoundingOnly) {
  // The case that failed on an Intel Xeon under the AVX2 cap (AdditiveStepBatch,
  // tol 1e-5, the oracle's floor 2e-3 * scale): an element near zero in a
  // tensor of scale 2.25, 6e-8 apart (1.27e-5 relative to |b| + floor).
  std::vector<float> ref = {2.25f, -0.000183194876f, 0.5f}, got = ref;
  got[1] = -0.000183135271f;
  EXPECT_REL_CLOSE(got, ref, 1e-5, 2e-3, 1e-30, "summation-order rounding near zero");
  // Two correct orders of a sum of 256 products that cancel to a small result
  std::vector<float> forward(64), reverse(64), want(64);
  for (int r = 0; r < 64; ++r) {
    float f = 0, b = 0;
    double exact = 0;
    for (int k = 0; k < 256; ++k) {
      const float x = std::sin(0.37f * float(k * 64 + r)) * 3.0f, y = std::cos(0.11f * float(k + r)) * 0.5f;
      f += x * y, exact += double(x) * double(y);
    }
    for (int k = 255; k >= 0; --k)
      b += std::sin(0.37f * float(k * 64 + r)) * 3.0f * (std::cos(0.11f * float(k + r)) * 0.5f);
    forward[r] = f, reverse[r] = b, want[r] = float(exact);
  }
  EXPECT_REL_CLOSE(forward, reverse, 1e-5, 0.0, 0.0, "two summation orders");
  EXPECT_REL_CLOSE(forward, want, 1e-5, 0.0, 0.0, "fp32 against the exact sum");
  const Diff orders = compare(forward, reverse);
  EXPECT_GT(orders.max_abs, 0.0) << "the two orders differ (else this test shows nothing)";
  // A real error: 1e-4 of the scale on one element (~60x the rounding floor)
  std::vector<float> planted = forward;
  planted[7] += float(orders.scale * 1e-4);
  EXPECT_NONFATAL_FAILURE(EXPECT_REL_CLOSE(planted, reverse, 1e-5, 0.0, 0.0, "planted"), "planted");
  // ... and just past the floor on an element whose reference is 0, without floors
  const Diff past = compare(std::vector<float>{float(17 * kEps * 30), 30}, std::vector<float>{0, 30});
  EXPECT_GT(past.max_rel, 1e30) << "17 ulp of the scale on a zero element is beyond rounding";
  // A NaN beside rounding-level differences fails
  std::vector<float> with_nan = forward;
  with_nan[3] = kNaNf;
  EXPECT_NONFATAL_FAILURE(EXPECT_REL_CLOSE(with_nan, reverse, 1e-5, 0.0, 0.0, "nan"), "max relative difference nan");
}

}  // namespace
}  // namespace attn::testing::compare_test
