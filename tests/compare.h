// The one element-wise comparison every test uses, NaN-strict: a NaN on
// either side, or an Inf on one side that the other does not have (the same
// Inf on both sides is equal), makes the differences NaN, which every
// EXPECT_LE / EXPECT_LT / EXPECT_EQ against a tolerance fails. Its running
// maximum cannot lose a NaN either: std::max(x, NaN) and std::fmax(x, NaN)
// return x, and `if (!(d <= worst)) worst = d` keeps an earlier NaN only
// until a later finite d replaces it; nan_max keeps it for good.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "attn/tensor/tensor.h"

namespace attn::testing {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// max / min that return NaN when either argument is NaN.
inline double nan_max(double acc, double x) { return std::isnan(acc) || std::isnan(x) ? kNaN : (x > acc ? x : acc); }
inline double nan_min(double acc, double x) { return std::isnan(acc) || std::isnan(x) ? kNaN : (x < acc ? x : acc); }

// worst = nan_max(worst, x); true when x became the worst (to record where).
inline bool raise_worst(double& worst, double x) {
  const double w = nan_max(worst, x);
  const bool changed = !std::isnan(worst) && (std::isnan(w) || w != worst);
  worst = w;
  return changed;
}

// The rounding any fp32 (or fp64) computation may leave in any element,
// whatever that element's size: kRoundingUlps ulp of the tensor's largest
// element. Why: an element that is a sum of many products rounds at the scale
// of its terms, not of its result, so one near zero in a tensor of scale 2 can
// differ by 6e-8 between two correct summation orders (AVX2 against AVX-512:
// 1.3e-5 relative to that element, over a 1e-5 tolerance). numpy.allclose and
// torch.testing.assert_close take such an absolute floor (atol) for the same
// reason. A difference up to it counts as none; above it, the excess is judged
// relative to the element. 16 ulp: two orders of a sum of n products differ
// by about sqrt(n) ulp of the partial sums, which exceed the result where terms
// cancel (256 cancelling products: 4.8 ulp of the result's scale, measured in
// Compare.RoundingFloorPassesRoundingOnly); a real error (a wrong term, a
// dropped mask) is far larger, and NaN / Inf still fail (below).
constexpr double kRoundingUlps = 16;

// What one comparison of a (computed) against b (reference) found.
struct Diff {
  double max_abs = 0;       // max |a - b|
  double max_rel = 0;       // max (|a - b| - rounding)+ / (|b| + floor), floor = max(rel_floor * scale, abs_floor)
  double rounding = 0;      // kRoundingUlps * epsilon(T) * scale: differences up to it are rounding
  double scale = 0;         // max |b| over the finite b
  int64_t worst = -1;       // the element of max_rel (or the first non-finite mismatch)
  int64_t worst_abs = -1;   // the element of max_abs (or the first non-finite mismatch)
  int64_t nonfinite = 0;    // elements with a NaN, or an Inf the other side does not share
  double normwise() const { return max_abs / (scale > 0 ? scale : 1.0); }  // max |a - b| / max |b|
  static Diff mismatch() {  // what a shape mismatch gives
    Diff d;
    d.max_abs = d.max_rel = kNaN;
    d.nonfinite = 1;
    return d;
  }
};

// a [n] against b [n]. Without floors an element with b == 0 and a != 0 counts
// as an infinite relative difference (unless the tensor's scale makes it rounding).
template <class T>
Diff compare(const T* a, const T* b, int64_t n, double rel_floor = 0, double abs_floor = 0) {
  Diff r;
  for (int64_t i = 0; i < n; ++i)
    if (std::isfinite(double(b[i]))) r.scale = std::fmax(r.scale, std::fabs(double(b[i])));  // b finite: no NaN here
  const double floor = std::fmax(rel_floor * r.scale, abs_floor);
  r.rounding = kRoundingUlps * double(std::numeric_limits<T>::epsilon()) * r.scale;
  for (int64_t i = 0; i < n; ++i) {
    const double x = double(a[i]), y = double(b[i]);
    if (!std::isfinite(x) || !std::isfinite(y)) {
      if (x == y) continue;  // the same Inf on both sides (NaN != NaN)
      if (r.nonfinite++ == 0) r.worst = r.worst_abs = i;
      continue;
    }
    const double d = std::fabs(x - y), excess = d - r.rounding;
    const double rel = excess <= 0 ? 0.0 : excess / (std::fabs(y) + floor);
    if (raise_worst(r.max_abs, d) && r.nonfinite == 0) r.worst_abs = i;
    if (raise_worst(r.max_rel, rel) && r.nonfinite == 0) r.worst = i;
  }
  if (r.nonfinite) r.max_abs = r.max_rel = kNaN;
  return r;
}

inline Diff compare(const std::vector<float>& a, const std::vector<float>& b, double rel_floor = 0,
                    double abs_floor = 0) {
  EXPECT_EQ(a.size(), b.size());
  if (a.size() != b.size()) return Diff::mismatch();
  return compare(a.data(), b.data(), int64_t(a.size()), rel_floor, abs_floor);
}

// Tensors: the shapes must agree (a mismatch fails the test and gives NaN).
inline Diff compare(const Tensor& a, const Tensor& b, double rel_floor = 0, double abs_floor = 0) {
  EXPECT_TRUE(a.defined() && b.defined());
  if (!a.defined() || !b.defined()) return Diff::mismatch();
  EXPECT_EQ(a.shape(), b.shape());
  if (a.shape() != b.shape()) return Diff::mismatch();
  return compare(a.data(), b.data(), a.numel(), rel_floor, abs_floor);
}

// "element 12: 0.5 vs 0.25 (0 non-finite mismatches)" for failure messages: element i of a and b.
template <class T>
std::string describe(const Diff& d, int64_t i, const T* a, const T* b) {
  if (i < 0) return d.nonfinite ? "shapes differ" : "no differing element";
  char buf[160];
  std::snprintf(buf, sizeof buf, "element %lld: %.9g vs %.9g (%lld non-finite mismatches)", (long long)i,
                double(a[i]), double(b[i]), (long long)d.nonfinite);
  return buf;
}
inline std::string describe(const Diff& d, int64_t i, const std::vector<float>& a, const std::vector<float>& b) {
  return describe(d, i, a.data(), b.data());
}
inline std::string describe(const Diff& d, int64_t i, const Tensor& a, const Tensor& b) {
  return describe(d, i, a.data(), b.data());
}

// Relative difference with a floor of rel_floor * max|b| (and at least abs_floor)
// at most tol, beyond the rounding of Diff::rounding; NaN or a one-sided Inf
// anywhere fails. As an allclose: |a - b| <= rounding + tol * (|b| + floor).
#define EXPECT_REL_CLOSE(a, b, tol, rel_floor, abs_floor, what)                                         \
  do {                                                                                                 \
    const auto& _a = (a);                                                                              \
    const auto& _b = (b);                                                                              \
    const ::attn::testing::Diff _d = ::attn::testing::compare(_a, _b, (rel_floor), (abs_floor));        \
    EXPECT_LE(_d.max_rel, (tol)) << (what) << ": max relative difference " << _d.max_rel << " at "     \
                                 << ::attn::testing::describe(_d, _d.worst, _a, _b);                    \
  } while (0)

// max |a - b| at most tol; NaN or a one-sided Inf anywhere fails.
#define EXPECT_ABS_CLOSE(a, b, tol, what)                                                             \
  do {                                                                                                \
    const auto& _a = (a);                                                                             \
    const auto& _b = (b);                                                                             \
    const ::attn::testing::Diff _d = ::attn::testing::compare(_a, _b);                                 \
    EXPECT_LE(_d.max_abs, (tol)) << (what) << ": max|diff| " << _d.max_abs << ", worst at "           \
                                 << ::attn::testing::describe(_d, _d.worst_abs, _a, _b);              \
  } while (0)

// max |a - b| / max |b| at most tol; NaN or a one-sided Inf anywhere fails.
#define EXPECT_NORMWISE_CLOSE(a, b, tol, what)                                                             \
  do {                                                                                                     \
    const auto& _a = (a);                                                                                  \
    const auto& _b = (b);                                                                                  \
    const ::attn::testing::Diff _d = ::attn::testing::compare(_a, _b);                                      \
    EXPECT_LE(_d.normwise(), (tol)) << (what) << ": max|diff|/max|ref| " << _d.normwise() << ", worst at " \
                                    << ::attn::testing::describe(_d, _d.worst_abs, _a, _b);                 \
  } while (0)

}  // namespace attn::testing
