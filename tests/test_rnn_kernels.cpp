// The recurrent gate kernels: the vectorised activations against libm in
// double, and the fast (FastMath) gate kernels against the reference
// (ExactMath) instantiation on the same data.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "attn/kernels/rnn_gates.h"
#include "attn/nn/rnn_gemm.h"
#include "attn/simd/math.h"
#include "attn/tensor/random.h"
#include "compare.h"
#include "isa_builds.h"

using namespace attn;
using attn::testing::compare;
using attn::testing::nan_max;
using attn::testing::random_vec;

namespace {

// Sweep [-30, 30] in steps of 1e-4 (600k points, every float binade from 1e-4 up)
// plus tiny arguments; worst relative error in units of 2^-24.
TEST(RnnMath, ActivationsWithinFourUlp) {
  const double ulp = std::ldexp(1.0, -24);
  double worst_exp = 0, worst_sig = 0, worst_tanh = 0;
  auto check = [&](float x) {
    double e = std::exp(double(x)), s = 1.0 / (1.0 + std::exp(-double(x))), t = std::tanh(double(x));
    worst_exp = nan_max(worst_exp, std::fabs(simd::exp(x) - e) / e);
    worst_sig = nan_max(worst_sig, std::fabs(simd::sigmoid(x) - s) / s);
    if (x != 0.0f) worst_tanh = nan_max(worst_tanh, std::fabs(simd::tanh(x) - t) / std::fabs(t));
  };
  for (int i = -300000; i <= 300000; ++i) check(float(i) * 1e-4f);
  for (float x = 1e-30f; x < 1e-3f; x *= 1.37f) check(x), check(-x);
  EXPECT_LE(worst_exp / ulp, 4.0);
  EXPECT_LE(worst_sig / ulp, 4.0);
  EXPECT_LE(worst_tanh / ulp, 4.0);
  // saturation: no NaN or overflow far out
  for (float x : {-1e4f, -100.0f, -88.5f, 88.5f, 100.0f, 1e4f}) {
    EXPECT_TRUE(std::isfinite(simd::exp(x)));
    EXPECT_NEAR(simd::sigmoid(x), x > 0 ? 1.0f : 0.0f, 1e-30f);
    EXPECT_EQ(simd::tanh(x), x > 0 ? 1.0f : -1.0f);
  }
}

// Relative difference for |b| >= 1, absolute below: the kernels' inputs are of
// order 1, so the pre-activation sums (and h' = n + z (h - n)) carry rounding
// of ~1e-7 absolute, which near a zero result is no relative bound at all (and
// the compiler may contract a*b+c into an FMA in one instantiation only).
// NaN on either side fails (compare.h).
double max_rel(const std::vector<float>& a, const std::vector<float>& b) { return compare(a, b, 0.0, 1.0).max_rel; }

// n = 70 rows, H = 67 (not a multiple of the SIMD width: tails run too). The
// fast kernel runs in two calls over the hidden slices [0, 32) and [32, 67), as
// two threads of the recurrence team would; the reference in one call.
TEST(RnnKernels, GruForwardFastEqualsReference) {
  const int64_t n = 70, H = 67;
  Rng rng(3);
  auto gx = random_vec(n * 3 * H, rng, 2), gh = random_vec(n * 3 * H, rng, 2), bi = random_vec(3 * H, rng, 1),
       bh = random_vec(3 * H, rng, 1), hp = random_vec(n * H, rng, 1);
  struct Out {
    std::vector<float> gates, ghn, y, next;
  };
  auto run = [&](rnn_kernels::Math m) {
    Out o{gx, std::vector<float>(n * H), std::vector<float>(n * H), std::vector<float>(n * H)};
    std::vector<float*> yr(n), nr(n);
    for (int64_t j = 0; j < n; ++j) yr[j] = o.y.data() + j * H, nr[j] = o.next.data() + j * H;
    rnn_kernels::GruForward a;
    a.n = n, a.hidden = H, a.k_begin = 0, a.k_end = m == rnn_kernels::Math::Fast ? 32 : H; a.gates = o.gates.data(), a.gh = gh.data(), a.b_ih = bi.data(), a.b_hh = bh.data();
    a.h_prev = hp.data(), a.ghn = o.ghn.data(), a.y_rows = yr.data(), a.next_rows = nr.data();
    rnn_kernels::gru_forward(a, m);
    if (m == rnn_kernels::Math::Fast) {
      a.k_begin = 32, a.k_end = H;
      rnn_kernels::gru_forward(a, m);
    }
    return o;
  };
  Out fast = run(rnn_kernels::Math::Fast), ref = run(rnn_kernels::Math::Exact);
  EXPECT_LE(max_rel(fast.gates, ref.gates), 1e-6);
  EXPECT_LE(max_rel(fast.y, ref.y), 1e-6);
  EXPECT_EQ(fast.y, fast.next);
  EXPECT_EQ(fast.ghn, ref.ghn);  // no transcendental function: bit-equal
  // h' between h and n: (1-z) n + z h
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = 0; k < H; ++k) {
      float z = ref.gates[j * 3 * H + H + k], nn = ref.gates[j * 3 * H + 2 * H + k];
      EXPECT_NEAR(ref.y[j * H + k], (1 - z) * nn + z * hp[j * H + k], 1e-6);
    }
}

TEST(RnnKernels, LstmForwardFastEqualsReference) {
  const int64_t n = 70, H = 67;
  Rng rng(4);
  auto gx = random_vec(n * 4 * H, rng, 2), gh = random_vec(n * 4 * H, rng, 2), bi = random_vec(4 * H, rng, 1),
       bh = random_vec(4 * H, rng, 1), cp = random_vec(n * H, rng, 1);
  struct Out {
    std::vector<float> gates, tc, y, next, c;
  };
  auto run = [&](rnn_kernels::Math m) {
    Out o{gx, std::vector<float>(n * H), std::vector<float>(n * H), std::vector<float>(n * H),
          std::vector<float>(n * H)};
    std::vector<float*> yr(n), nr(n), cr(n);
    for (int64_t j = 0; j < n; ++j)
      yr[j] = o.y.data() + j * H, nr[j] = o.next.data() + j * H, cr[j] = o.c.data() + j * H;
    rnn_kernels::LstmForward a;
    a.n = n, a.hidden = H, a.k_begin = 0, a.k_end = m == rnn_kernels::Math::Fast ? 32 : H; a.gates = o.gates.data(), a.gh = gh.data(), a.b_ih = bi.data(), a.b_hh = bh.data();
    a.c_prev = cp.data(), a.tanh_c = o.tc.data(), a.y_rows = yr.data(), a.next_rows = nr.data(), a.c_rows = cr.data();
    rnn_kernels::lstm_forward(a, m);
    if (m == rnn_kernels::Math::Fast) {
      a.k_begin = 32, a.k_end = H;
      rnn_kernels::lstm_forward(a, m);
    }
    return o;
  };
  Out fast = run(rnn_kernels::Math::Fast), ref = run(rnn_kernels::Math::Exact);
  EXPECT_LE(max_rel(fast.gates, ref.gates), 1e-6);
  EXPECT_LE(max_rel(fast.c, ref.c), 1e-6);
  EXPECT_LE(max_rel(fast.y, ref.y), 1e-6);
  EXPECT_EQ(fast.y, fast.next);
}

// The packed step GEMM against plain loops on the unpacked weight, for both
// packings, odd sizes (partial panels, row remainders of the 6- or 12-row
// micro-kernel), thread-like column slices and both accumulate modes. Float32
// accumulation: within 1e-6 of the sum of the terms' magnitudes (~16 ulp).
TEST(RnnGemm, PackedEqualsPlainProduct) {
  Rng rng(8);
  for (int64_t m : {1, 5, 6, 11, 13, 24}) {
    const int64_t H = 40, G = 3, GH = G * H;  // H = 40: panels of 32 + 8 per gate
    auto w = random_vec(GH * H, rng, 1);      // W [G*H, H]
    // forward: C[m, GH] = A[m, H] W^T
    {
      auto a = random_vec(m * H, rng, 1), c0 = random_vec(m * GH, rng, 1);
      rnn_gemm::PackedWeight p = rnn_gemm::pack_transposed(w.data(), H, G, H);
      for (bool acc : {false, true}) {
        auto c = c0;
        rnn_gemm::gemm_packed(m, a.data(), H, p, 0, 32, c.data(), GH, acc);  // two "threads"
        rnn_gemm::gemm_packed(m, a.data(), H, p, 32, H, c.data(), GH, acc);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t col = 0; col < GH; ++col) {
            double s = acc ? c0[i * GH + col] : 0.0, mag = std::fabs(s);
            for (int64_t k = 0; k < H; ++k) s += double(a[i * H + k]) * w[col * H + k];
            for (int64_t k = 0; k < H; ++k) mag += std::fabs(double(a[i * H + k]) * w[col * H + k]);
            ASSERT_NEAR(c[i * GH + col], s, 1e-6 * mag) << "forward m" << m << " acc" << acc << " [" << i << "," << col << "]";
          }
      }
    }
    // backward: C[m, H] = A[m, GH] W
    {
      auto a = random_vec(m * GH, rng, 1), c0 = random_vec(m * H, rng, 1);
      rnn_gemm::PackedWeight p = rnn_gemm::pack(w.data(), GH, H);
      for (bool acc : {false, true}) {
        auto c = c0;
        rnn_gemm::gemm_packed(m, a.data(), GH, p, 0, 32, c.data(), H, acc);
        rnn_gemm::gemm_packed(m, a.data(), GH, p, 32, H, c.data(), H, acc);
        for (int64_t i = 0; i < m; ++i)
          for (int64_t col = 0; col < H; ++col) {
            double s = acc ? c0[i * H + col] : 0.0, mag = std::fabs(s);
            for (int64_t k = 0; k < GH; ++k) s += double(a[i * GH + k]) * w[k * H + col];
            for (int64_t k = 0; k < GH; ++k) mag += std::fabs(double(a[i * GH + k]) * w[k * H + col]);
            ASSERT_NEAR(c[i * H + col], s, 1e-6 * mag) << "backward m" << m << " acc" << acc << " [" << i << "," << col << "]";
          }
      }
    }
  }
  rnn_gemm::PackedWeight p = rnn_gemm::pack(std::vector<float>(64 * 8).data(), 8, 64);
  std::vector<float> a(8), c(64);
  EXPECT_THROW(rnn_gemm::gemm_packed(1, a.data(), 8, p, 16, 64, c.data(), 64, false), std::invalid_argument);
}

}  // namespace
