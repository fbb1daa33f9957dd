// kernels::gemm against a plain double-precision reference, on the shapes that
// take its matrix-vector route (M == 1 or N == 1, to cblas_sgemv) and on
// ordinary ones: every transpose combination, odd sizes, leading dimensions
// larger than the row, beta 0 over a NaN-filled output, beta != 0 and alpha != 1.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "attn/tensor/kernels.h"
#include "attn/tensor/random.h"

using namespace attn;

namespace {

struct Case {
  int64_t M, N, K;
};

void check_gemm(const Case& c, bool ta, bool tb, float alpha, float beta, Rng& rng) {
  const int64_t pad = 3;  // leading dimensions exceed the logical row length
  const int64_t a_rows = ta ? c.K : c.M, a_cols = ta ? c.M : c.K;
  const int64_t b_rows = tb ? c.N : c.K, b_cols = tb ? c.K : c.N;
  const int64_t lda = a_cols + pad, ldb = b_cols + pad, ldc = c.N + pad;
  std::vector<float> A(size_t(a_rows * lda)), B(size_t(b_rows * ldb)), C(size_t(c.M * ldc));
  for (float& x : A) x = rng.uniform(-1, 1);
  for (float& x : B) x = rng.uniform(-1, 1);
  for (float& x : C) x = beta == 0.0f ? std::numeric_limits<float>::quiet_NaN() : rng.uniform(-1, 1);
  std::vector<float> C0 = C;
  kernels::gemm(ta, tb, c.M, c.N, c.K, alpha, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < c.K; ++k) {
        const double a = ta ? A[size_t(k * lda + i)] : A[size_t(i * lda + k)];
        const double b = tb ? B[size_t(j * ldb + k)] : B[size_t(k * ldb + j)];
        s += a * b;
      }
      const double want = alpha * s + (beta == 0.0f ? 0.0 : double(beta) * C0[size_t(i * ldc + j)]);
      ASSERT_NEAR(C[size_t(i * ldc + j)], want, 1e-5 * (1 + std::sqrt(double(c.K))))
          << "M " << c.M << " N " << c.N << " K " << c.K << " ta " << ta << " tb " << tb << " beta " << beta
          << " at " << i << "," << j;
    }
  // the padding between rows of C is never written
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = c.N; j < ldc; ++j) {
      const float got = C[size_t(i * ldc + j)], was = C0[size_t(i * ldc + j)];
      ASSERT_TRUE(got == was || (std::isnan(got) && std::isnan(was))) << "padding written at " << i << "," << j;
    }
}

TEST(Gemm, MatrixVectorRouteAndGeneralShapesMatchReference) {
  Rng rng(11);
  const std::vector<Case> cases = {{1, 1, 1},   {1, 1, 37},  {1, 7, 5},    {1, 513, 257}, {7, 1, 5},
                                   {513, 1, 33}, {1, 8000, 9}, {3, 5, 7},    {13, 33, 65},  {2, 1, 300},
                                   {1, 2, 300},  {64, 96, 17}, {1, 1536, 768}};
  for (const Case& c : cases)
    for (int t = 0; t < 4; ++t) {
      check_gemm(c, t & 1, t & 2, 1.0f, 0.0f, rng);
      check_gemm(c, t & 1, t & 2, -0.5f, 0.75f, rng);
      check_gemm(c, t & 1, t & 2, 2.0f, 1.0f, rng);
    }
}

TEST(Gemm, EmptySumIsZeroOrBetaC) {
  std::vector<float> C = {std::numeric_limits<float>::quiet_NaN(), 2.0f};
  kernels::gemm(false, false, 1, 2, 0, 1.0f, nullptr, 1, nullptr, 2, 0.0f, C.data(), 2);
  EXPECT_EQ(C[0], 0.0f);
  EXPECT_EQ(C[1], 0.0f);
  C = {1.0f, 2.0f};
  kernels::gemm(false, false, 2, 1, 0, 1.0f, nullptr, 1, nullptr, 1, 0.5f, C.data(), 1);
  EXPECT_EQ(C[0], 0.5f);
  EXPECT_EQ(C[1], 1.0f);
}

}  // namespace
