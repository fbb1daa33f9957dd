// The int8 and bf16 step products (kernels/quant_gemm.h, nn/step_weight_types.h):
// every build of each kernel this CPU runs, with and without its dot-product
// instructions, against a reference written from the definitions (exact: the
// int8 sums are integers, the bf16 products exact in fp32 and added in
// vdpbf16ps's order); quantisation round trips within their bounds; zero,
// constant and outlier rows; sizes that fill no vector; StepLinear's and
// apply_all's paths equal to the kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/kernels/quant_gemm.h"
#include "attn/nn/step_linear.h"
#include "attn/tensor/random.h"
#include "isa_builds.h"

using namespace attn;
namespace qk = attn::quant::kernels;

namespace {

using attn::testing::runnable_isas;

Tensor random_matrix(int64_t rows, int64_t cols, Rng& rng, float scale = 1.0f) {
  Tensor t = Tensor::empty({rows, cols});
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = scale * rng.normal();
  return t;
}

// round(x / s) with s = max|row| / 127, as the definitions in quant_gemm.h say
std::vector<int32_t> quantised_row(const float* x, int64_t K, float& scale) {
  float amax = 0.0f;
  for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(x[k]));
  scale = amax / 127.0f;
  std::vector<int32_t> q(size_t(K), 0);
  if (amax > 0.0f)
    for (int64_t k = 0; k < K; ++k) q[size_t(k)] = int32_t(std::nearbyint(x[k] * (127.0f / amax)));
  return q;
}

// c[i, o] = (s_a[i] s_w[o]) * sum_k a_q[i, k] w_q[o, k], from the definitions
std::vector<float> int8_reference(const Tensor& a, const Tensor& w) {
  const int64_t m = a.size(0), K = a.size(1), out = w.size(0);
  std::vector<float> c(size_t(m * out));
  for (int64_t i = 0; i < m; ++i) {
    float sa = 0.0f;
    const std::vector<int32_t> qa = quantised_row(a.data() + i * K, K, sa);
    for (int64_t o = 0; o < out; ++o) {
      float sw = 0.0f;
      const std::vector<int32_t> qw = quantised_row(w.data() + o * K, K, sw);
      int64_t sum = 0;
      for (int64_t k = 0; k < K; ++k) sum += int64_t(qa[size_t(k)]) * qw[size_t(k)];
      c[size_t(i * out + o)] = (sa * sw) * float(sum);
    }
  }
  return c;
}

// c[i, o] = sum over pairs (odd product first, then even) of bf16(a) bf16(w), in fp32
std::vector<float> bf16_reference(const Tensor& a, const Tensor& w) {
  const int64_t m = a.size(0), K = a.size(1), out = w.size(0);
  auto r = [](float x) { return qk::float_of_bf16(qk::bf16_of(x)); };
  std::vector<float> c(size_t(m * out));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t o = 0; o < out; ++o) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; k += 2) {
        const float a_odd = k + 1 < K ? r(a.data()[i * K + k + 1]) : 0.0f;
        const float w_odd = k + 1 < K ? r(w.data()[o * K + k + 1]) : 0.0f;
        acc += a_odd * w_odd;
        acc += r(a.data()[i * K + k]) * r(w.data()[o * K + k]);
      }
      c[size_t(i * out + o)] = acc;
    }
  return c;
}

struct GemmShape {
  int64_t m, K, out;
};
// single rows and vectors' worth of rows, K not a multiple of 4 (or 2), outputs
// not a multiple of the 32-wide panel nor of a vector, row blocks of 12 and their rest
const GemmShape kShapes[] = {{1, 1, 1}, {1, 3, 33}, {2, 5, 17}, {5, 17, 31}, {13, 64, 100},
                         {12, 255, 65}, {3, 256, 32}, {25, 96, 70}};

// The int8 product of every build, native and portable, equals the reference exactly.
using S8Fn = void (*)(int64_t, const uint8_t*, int64_t, const float*, const qk::S8Panels&, int64_t, int64_t, float*,
                      int64_t, bool, bool);
using QuantizeFn = void (*)(int64_t, int64_t, const float*, int64_t, uint8_t*, int64_t, float*);

TEST(QuantGemm, Int8EveryBuildEqualsTheDefinitionExactly) {
  Rng rng(3);
  for (const GemmShape& s : kShapes) {
    const Tensor a = random_matrix(s.m, s.K, rng), w = random_matrix(s.out, s.K, rng, 0.1f);
    nn::StepWeightStorage st;
    nn::step_weight_kernels(nn::StepWeightType::I8).prepare(w, true, st);
    const qk::S8Panels view{reinterpret_cast<const int8_t*>(st.bytes.get()), st.scale.data(), st.comp.data(),
                            (s.K + 3) / 4, s.out};
    const std::vector<float> ref = int8_reference(a, w);
    const int64_t ldq = (s.K + 3) / 4 * 4, panels = (s.out + 31) / 32;
    for (cpu::Isa isa : runnable_isas()) {
      const QuantizeFn quantize = isa == cpu::Isa::avx512 ? qk::avx512::quantize_rows
                                  : isa == cpu::Isa::avx2 ? qk::avx2::quantize_rows
                                                          : qk::scalar::quantize_rows;
      const S8Fn gemm = isa == cpu::Isa::avx512 ? qk::avx512::gemm_s8
                        : isa == cpu::Isa::avx2 ? qk::avx2::gemm_s8
                                                : qk::scalar::gemm_s8;
      const bool can_native = (isa == cpu::Isa::avx512 && cpu::features().avx512_vnni) ||
                              (isa == cpu::Isa::avx2 && cpu::features().avx_vnni);
      std::vector<uint8_t> q(size_t(s.m * ldq));
      std::vector<float> sa(size_t(s.m));
      quantize(s.m, s.K, a.data(), s.K, q.data(), ldq, sa.data());
      for (bool native : {false, true}) {
        if (native && !can_native) continue;
        std::vector<float> c(size_t(s.m * s.out), -7.0f);
        gemm(s.m, q.data(), ldq, sa.data(), view, 0, panels, c.data(), s.out, false, native);
        for (size_t j = 0; j < c.size(); ++j)
          ASSERT_EQ(c[j], ref[j]) << cpu::isa_name(isa) << " native=" << native << " m " << s.m << " K " << s.K
                                  << " out " << s.out << " at " << j;
        // accumulate adds to what is there (within a rounding of the sum: the
        // compiler may fuse the scaling and the add into one FMA)
        std::vector<float> acc(size_t(s.m * s.out), 1.0f);
        gemm(s.m, q.data(), ldq, sa.data(), view, 0, panels, acc.data(), s.out, true, native);
        for (size_t j = 0; j < c.size(); ++j)
          ASSERT_NEAR(acc[j], 1.0f + ref[j], 1.2e-7f * (1.0f + std::fabs(ref[j])));
      }
    }
  }
}

TEST(QuantGemm, QuantisedRowsAgreeByteForByteAndPadWith128) {
  Rng rng(4);
  const Tensor a = random_matrix(7, 13, rng);
  const int64_t ldq = 16;
  std::vector<uint8_t> first;
  for (cpu::Isa isa : runnable_isas()) {
    const QuantizeFn quantize = isa == cpu::Isa::avx512 ? qk::avx512::quantize_rows
                                : isa == cpu::Isa::avx2 ? qk::avx2::quantize_rows
                                                        : qk::scalar::quantize_rows;
    std::vector<uint8_t> q(size_t(7 * ldq), 0);
    std::vector<float> sa(7);
    quantize(7, 13, a.data(), 13, q.data(), ldq, sa.data());
    for (int64_t i = 0; i < 7; ++i)
      for (int64_t k = 13; k < 16; ++k) EXPECT_EQ(q[size_t(i * ldq + k)], 128);
    if (first.empty()) first = q;
    EXPECT_EQ(q, first) << cpu::isa_name(isa);
  }
}

// The round trip: |dequantised - x| <= s / 2 per element; the product's error
// against fp32 within its bound K max|a| max|w| (1/127 + 1/(4 127^2)) per row,
// for zero, constant and outlier rows too.
TEST(QuantGemm, Int8ErrorStaysWithinItsBoundOnOrdinaryZeroConstantAndOutlierRows) {
  Rng rng(6);
  const int64_t K = 96, out = 40;
  Tensor a = random_matrix(4, K, rng), w = random_matrix(out, K, rng, 0.2f);
  for (int64_t k = 0; k < K; ++k) a.data()[1 * K + k] = 0.0f;     // a zero row
  for (int64_t k = 0; k < K; ++k) a.data()[2 * K + k] = 0.75f;    // a constant row
  a.data()[3 * K + 5] = 1000.0f;                                   // an outlier
  for (int64_t i = 0; i < 4; ++i) {
    float s = 0.0f;
    const std::vector<int32_t> q = quantised_row(a.data() + i * K, K, s);
    for (int64_t k = 0; k < K; ++k) EXPECT_LE(std::fabs(float(q[size_t(k)]) * s - a.data()[i * K + k]), s / 2 + 1e-6f);
  }
  nn::StepLinear lin(w, true, nn::StepWeightType::I8);
  nn::StepInput in;
  std::vector<float> c(size_t(4 * out));
  lin.apply(in.set(nn::StepWeightType::I8, 4, K, a.data(), K), 0, lin.units(), c.data(), out);
  const float wmax = [&] {
    float m = 0;
    for (int64_t j = 0; j < w.numel(); ++j) m = std::max(m, std::fabs(w.data()[j]));
    return m;
  }();
  for (int64_t i = 0; i < 4; ++i) {
    float amax = 0;
    for (int64_t k = 0; k < K; ++k) amax = std::max(amax, std::fabs(a.data()[i * K + k]));
    const double bound = double(K) * amax * wmax * (1.0 / 127 + 1.0 / (4.0 * 127 * 127)) + 1e-6;
    for (int64_t o = 0; o < out; ++o) {
      double exact = 0;
      for (int64_t k = 0; k < K; ++k) exact += double(a.data()[i * K + k]) * w.data()[o * K + k];
      EXPECT_LE(std::fabs(c[size_t(i * out + o)] - exact), bound) << "row " << i << " output " << o;
      if (i == 1) EXPECT_EQ(c[size_t(i * out + o)], 0.0f);  // a zero row gives exact zeros
    }
  }
  // the constant row: every activation quantises to 127 exactly, so only W's rounding is left
  for (int64_t o = 0; o < out; ++o) {
    double exact = 0;
    for (int64_t k = 0; k < K; ++k) exact += 0.75 * w.data()[o * K + k];
    float sw = 0;
    (void)quantised_row(w.data() + o * K, K, sw);
    EXPECT_LE(std::fabs(c[size_t(2 * out + o)] - exact), double(K) * 0.75 * sw / 2 + 1e-5);
  }
}

// A row holding NaN or an infinity has no scale: every build gives it the
// scale NaN or infinity (the others untouched), so its products are NaN, as
// fp32's would be.
TEST(QuantGemm, Int8RowsWithNaNOrInfinityGiveNaNProducts) {
  Rng rng(8);
  const int64_t K = 37, out = 19, ldq = 40;
  Tensor a = random_matrix(3, K, rng), w = random_matrix(out, K, rng, 0.2f);
  a.data()[0 * K + 30] = std::numeric_limits<float>::quiet_NaN();
  a.data()[2 * K + 3] = -std::numeric_limits<float>::infinity();
  for (cpu::Isa isa : runnable_isas()) {
    const QuantizeFn quantize = isa == cpu::Isa::avx512 ? qk::avx512::quantize_rows
                                : isa == cpu::Isa::avx2 ? qk::avx2::quantize_rows
                                                        : qk::scalar::quantize_rows;
    std::vector<uint8_t> q(size_t(3 * ldq));
    std::vector<float> sa(3);
    quantize(3, K, a.data(), K, q.data(), ldq, sa.data());
    EXPECT_TRUE(std::isnan(sa[0])) << cpu::isa_name(isa);
    EXPECT_TRUE(std::isfinite(sa[1]) && sa[1] > 0.0f) << cpu::isa_name(isa);
    EXPECT_TRUE(std::isinf(sa[2])) << cpu::isa_name(isa);
  }
  nn::StepLinear lin(w, true, nn::StepWeightType::I8);
  nn::StepInput in;
  std::vector<float> c(size_t(3 * out));
  lin.apply(in.set(nn::StepWeightType::I8, 3, K, a.data(), K), 0, lin.units(), c.data(), out);
  for (int64_t o = 0; o < out; ++o) {
    EXPECT_TRUE(std::isnan(c[size_t(o)])) << "NaN row, output " << o;
    EXPECT_TRUE(std::isfinite(c[size_t(out + o)])) << "ordinary row, output " << o;
    EXPECT_TRUE(std::isnan(c[size_t(2 * out + o)])) << "infinite row, output " << o;
  }
}

using Bf16Fn = void (*)(int64_t, const uint16_t*, int64_t, const qk::Bf16Panels&, int64_t, int64_t, float*, int64_t,
                        bool, bool);

TEST(QuantGemm, Bf16EveryBuildEqualsVdpbf16psOrderExactly) {
  Rng rng(8);
  for (const GemmShape& s : kShapes) {
    const Tensor a = random_matrix(s.m, s.K, rng), w = random_matrix(s.out, s.K, rng, 0.1f);
    nn::StepWeightStorage st;
    nn::step_weight_kernels(nn::StepWeightType::BF16).prepare(w, true, st);
    const qk::Bf16Panels view{reinterpret_cast<const uint16_t*>(st.bytes.get()), (s.K + 1) / 2, s.out};
    const std::vector<float> ref = bf16_reference(a, w);
    const int64_t ldb = (s.K + 1) / 2 * 2, panels = (s.out + 31) / 32;
    std::vector<uint16_t> x(size_t(s.m * ldb));
    qk::to_bf16_rows(s.m, s.K, a.data(), s.K, x.data(), ldb);
    for (cpu::Isa isa : runnable_isas()) {
      const Bf16Fn gemm = isa == cpu::Isa::avx512 ? qk::avx512::gemm_bf16
                          : isa == cpu::Isa::avx2 ? qk::avx2::gemm_bf16
                                                  : qk::scalar::gemm_bf16;
      const bool can_native = isa == cpu::Isa::avx512 && cpu::features().avx512_bf16;
      for (bool native : {false, true}) {
        if (native && !can_native) continue;
        std::vector<float> c(size_t(s.m * s.out), -7.0f);
        gemm(s.m, x.data(), ldb, view, 0, panels, c.data(), s.out, false, native);
        for (size_t j = 0; j < c.size(); ++j)
          ASSERT_EQ(c[j], ref[j]) << cpu::isa_name(isa) << " native=" << native << " m " << s.m << " K " << s.K
                                  << " out " << s.out << " at " << j;
      }
    }
  }
}

TEST(QuantGemm, Bf16RoundsToNearestEvenAndKeepsNaN) {
  EXPECT_EQ(qk::bf16_of(1.0f), 0x3f80);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: to the even one, 1.0
  EXPECT_EQ(qk::bf16_of(1.0f + 1.0f / 256), 0x3f80);
  EXPECT_EQ(qk::bf16_of(1.0f + 3.0f / 256), 0x3f82);  // halfway above an odd one: up
  EXPECT_TRUE(std::isnan(qk::float_of_bf16(qk::bf16_of(std::nanf("")))));
  EXPECT_EQ(qk::float_of_bf16(qk::bf16_of(-2.5f)), -2.5f);
}

// StepLinear's types through StepInput, units split any way, and apply_all, agree
// with the kernels; rows() views a block of rows.
TEST(QuantGemm, StepLinearAndApplyAllOfEveryTypeAgreeWithOneCall) {
  Rng rng(9);
  const int64_t m = 9, K = 70, out = 130;
  const Tensor a = random_matrix(m, K, rng), w = random_matrix(out, K, rng, 0.1f);
  for (nn::StepWeightType type : {nn::StepWeightType::F32, nn::StepWeightType::I8, nn::StepWeightType::BF16}) {
    nn::StepLinear lin(w, true, type);
    nn::StepInput in;
    const nn::StepRows& x = in.set(type, m, K, a.data(), K);
    std::vector<float> whole(size_t(m * out)), split(size_t(m * out)), all(size_t(m * out)), rows(size_t(m * out));
    lin.apply(x, 0, lin.units(), whole.data(), out);
    for (int64_t u = 0; u < lin.units(); ++u) lin.apply(x, u, u + 1, split.data(), out);
    nn::StepInput scratch;
    nn::apply_all(lin, scratch, m, a.data(), K, all.data(), out, false);
    for (int64_t i0 = 0; i0 < m; i0 += 4) {
      const int64_t n = std::min<int64_t>(4, m - i0);
      for (int64_t u = 0; u < lin.units(); ++u) {
        std::vector<float> tile(size_t(n * 32));
        lin.apply_unit(x.rows(i0, n), u, tile.data(), 32);
        for (int64_t i = 0; i < n; ++i)
          for (int64_t j = 0; j < lin.unit_cols(u); ++j) rows[size_t((i0 + i) * out + u * 32 + j)] = tile[size_t(i * 32 + j)];
      }
    }
    EXPECT_EQ(whole, split) << nn::step_weight_kernels(type).name;
    EXPECT_EQ(whole, all) << nn::step_weight_kernels(type).name;
    EXPECT_EQ(whole, rows) << nn::step_weight_kernels(type).name;
  }
  EXPECT_EQ(nn::step_weight_type("int8"), nn::StepWeightType::I8);
  EXPECT_EQ(nn::step_weight_type("bf16"), nn::StepWeightType::BF16);
  EXPECT_THROW(nn::step_weight_type("fp16"), std::invalid_argument);
  // fp32 rows straight into an int8 weight are refused: they go through StepInput
  nn::StepLinear i8(w, true, nn::StepWeightType::I8);
  std::vector<float> c(size_t(m * out));
  EXPECT_THROW(i8.apply(m, a.data(), K, 0, 1, c.data(), out), std::logic_error);
}

}  // namespace
