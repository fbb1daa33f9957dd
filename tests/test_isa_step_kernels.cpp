// The search steps' row kernels, every instruction-set build against a
// reference in double: multi-head attention rows (kernels/mha_rows.h), Luong's
// dot-score row (kernels/luong_rows.h), layer norm rows (kernels/layer_norm.h)
// and the product tiles' epilogue (kernels/tile_epilogue.h).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/kernels/layer_norm.h"
#include "attn/kernels/luong_rows.h"
#include "attn/kernels/mha_rows.h"
#include "attn/kernels/tile_epilogue.h"
#include "attn/tensor/random.h"
#include "isa_builds.h"

using namespace attn;
using attn::testing::random_vec;
using attn::testing::runnable_isas;

namespace {

// softmax_j(q . k_j) and sum_j p_j v_j in double, for keys / values given by pointer
void reference_attend(const float* q, const std::vector<const float*>& k, const std::vector<const float*>& v,
                      int64_t d, std::vector<double>& p, std::vector<double>& ctx) {
  const size_t n = k.size();
  p.assign(n, 0.0), ctx.assign(size_t(d), 0.0);
  double mx = -INFINITY, sum = 0;
  for (size_t j = 0; j < n; ++j) {
    for (int64_t i = 0; i < d; ++i) p[j] += double(q[i]) * k[j][i];
    mx = std::max(mx, p[j]);
  }
  for (auto& x : p) sum += (x = std::exp(x - mx));
  for (size_t j = 0; j < n; ++j) {
    p[j] /= sum;
    for (int64_t i = 0; i < d; ++i) ctx[size_t(i)] += p[j] * v[j][i];
  }
}

using MhaFn = void (*)(const kernels::mha::HeadRows&);
MhaFn mha_build(cpu::Isa isa) {
  namespace k = kernels::mha;
  return isa == cpu::Isa::avx512 ? k::avx512::attend : isa == cpu::Isa::avx2 ? k::avx2::attend : k::scalar::attend;
}

// Both layouts the search reads: a cache whose positions lie at offsets (all
// heads of a position together) and a memory [H, n, hd] (head-major); head
// sizes that fill whole vectors (64: a 16-vector block of the context with 4
// heads; on AVX2 8 vectors, one head), that do not (20), and of 32 and 16
// floats (AVX2: 2 and 4 heads to a block; AVX-512: 8 heads, and one vector a
// head); n of 1 to 12, with and without a remainder of the positions scored
// four at a time.
TEST(IsaStepKernels, MultiHeadRowsEveryBuildMatchesTheReference) {
  Rng rng(11);
  struct Case {
    int64_t H, hd, n;
    bool offsets;
  };
  for (const Case c : {Case{4, 64, 7, true}, Case{4, 64, 12, false}, Case{3, 20, 5, true}, Case{2, 20, 1, false},
                       Case{8, 32, 9, true}, Case{16, 16, 6, false}, Case{4, 64, 3, true}}) {
    SCOPED_TRACE("H " + std::to_string(c.H) + " hd " + std::to_string(c.hd) + " n " + std::to_string(c.n));
    const int64_t E = c.H * c.hd, slots = 3;
    // offsets: position j of the row at slot (j * 7) % slots of a [n, slots, E] cache; else [H, n, hd]
    const std::vector<float> q = random_vec(E, rng, 0.3f), keys = random_vec(c.n * slots * E, rng),
                             values = random_vec(c.n * slots * E, rng);
    std::vector<int64_t> offsets;
    for (int64_t j = 0; j < c.n; ++j) offsets.push_back((j * slots + (j * 7) % slots) * E);
    kernels::mha::HeadRows r;
    r.H = c.H, r.hd = c.hd, r.n = c.n, r.q = q.data(), r.keys = keys.data(), r.values = values.data();
    r.head_stride = c.offsets ? c.hd : c.n * c.hd, r.pos_stride = c.offsets ? 0 : c.hd;
    r.offsets = c.offsets ? offsets.data() : nullptr;
    r.ldp = c.n + 3;
    for (cpu::Isa isa : runnable_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      std::vector<float> p(size_t(c.H * r.ldp), NAN), ctx(size_t(E), NAN);
      r.p = p.data(), r.ctx = ctx.data();
      mha_build(isa)(r);
      for (int64_t h = 0; h < c.H; ++h) {
        std::vector<const float*> k, v;
        for (int64_t j = 0; j < c.n; ++j) {
          const int64_t at = h * r.head_stride + (c.offsets ? offsets[size_t(j)] : j * r.pos_stride);
          k.push_back(keys.data() + at), v.push_back(values.data() + at);
        }
        std::vector<double> pw, cw;
        reference_attend(q.data() + h * c.hd, k, v, c.hd, pw, cw);
        for (int64_t j = 0; j < c.n; ++j) EXPECT_NEAR(p[size_t(h * r.ldp + j)], pw[size_t(j)], 2e-6) << "p " << h << "," << j;
        for (int64_t i = 0; i < c.hd; ++i) EXPECT_NEAR(ctx[size_t(h * c.hd + i)], cw[size_t(i)], 2e-5) << "ctx " << h << "," << i;
      }
    }
  }
}

// Luong's dot row: a window [lo, hi) inside S (zeros outside), a key size that
// is not a multiple of any vector width
TEST(IsaStepKernels, DotAttendEveryBuildMatchesTheReference) {
  Rng rng(12);
  const int64_t S = 11, K = 37, lo = 2, hi = 9;
  const std::vector<float> q = random_vec(K, rng, 0.3f), keys = random_vec(S * K, rng), values = random_vec(S * K, rng);
  std::vector<const float*> k, v;
  for (int64_t j = lo; j < hi; ++j) k.push_back(keys.data() + j * K), v.push_back(values.data() + j * K);
  std::vector<double> pw, cw;
  reference_attend(q.data(), k, v, K, pw, cw);
  for (cpu::Isa isa : runnable_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    namespace lk = models::luong_kernels;
    auto fn = isa == cpu::Isa::avx512 ? lk::avx512::dot_attend
              : isa == cpu::Isa::avx2 ? lk::avx2::dot_attend
                                      : lk::scalar::dot_attend;
    std::vector<float> a(S, NAN), c(K, NAN);
    lk::DotAttend r;
    r.K = K, r.Dv = K, r.S = S, r.lo = lo, r.hi = hi, r.q = q.data(), r.keys = keys.data(), r.values = values.data();
    r.a = r.w = a.data(), r.c = c.data();
    fn(r);
    for (int64_t j = 0; j < S; ++j)
      EXPECT_NEAR(a[size_t(j)], j >= lo && j < hi ? pw[size_t(j - lo)] : 0.0, 2e-6) << "weight " << j;
    for (int64_t i = 0; i < K; ++i) EXPECT_NEAR(c[size_t(i)], cw[size_t(i)], 2e-5) << "context " << i;
  }
}

// Rows with a large mean (the variance must not cancel), n not a multiple of a
// vector, with and without xhat / rstd, and in place
TEST(IsaStepKernels, LayerNormRowsEveryBuildMatchTheReference) {
  Rng rng(13);
  const int64_t rows = 3, n = 37;
  std::vector<float> x = random_vec(rows * n, rng), w = random_vec(n, rng), b = random_vec(n, rng);
  for (int64_t j = 0; j < n; ++j) x[size_t(n + j)] += 1000.0f;
  std::vector<double> ref(x.size()), rstd_ref(rows);
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0, var = 0;
    for (int64_t j = 0; j < n; ++j) mu += x[size_t(r * n + j)];
    mu /= double(n);
    for (int64_t j = 0; j < n; ++j) var += (x[size_t(r * n + j)] - mu) * (x[size_t(r * n + j)] - mu);
    rstd_ref[size_t(r)] = 1.0 / std::sqrt(var / double(n) + 1e-5);
    for (int64_t j = 0; j < n; ++j)
      ref[size_t(r * n + j)] = (x[size_t(r * n + j)] - mu) * rstd_ref[size_t(r)] * w[size_t(j)] + b[size_t(j)];
  }
  for (cpu::Isa isa : runnable_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    namespace kn = kernels::norm;
    auto fn = isa == cpu::Isa::avx512 ? kn::avx512::layer_norm_rows
              : isa == cpu::Isa::avx2 ? kn::avx2::layer_norm_rows
                                      : kn::scalar::layer_norm_rows;
    std::vector<float> out(x.size(), NAN), xhat(x.size(), NAN), rstd(rows, NAN), inplace = x;
    fn(x.data(), rows, n, w.data(), b.data(), 1e-5f, out.data(), xhat.data(), rstd.data());
    fn(inplace.data(), rows, n, w.data(), b.data(), 1e-5f, inplace.data(), nullptr, nullptr);
    for (size_t i = 0; i < x.size(); ++i) {
      EXPECT_NEAR(out[i], ref[i], 1e-4 * (1 + std::abs(ref[i]))) << i;
      EXPECT_EQ(inplace[i], out[i]) << i;
      EXPECT_NEAR(xhat[i] * w[i % size_t(n)] + b[i % size_t(n)], out[i], 1e-5 * (1 + std::abs(out[i]))) << i;
    }
    for (int64_t r = 0; r < rows; ++r) EXPECT_NEAR(rstd[size_t(r)], rstd_ref[size_t(r)], 1e-6 * rstd_ref[size_t(r)]);
  }
}

// Every mode of the tile epilogue, into a wider output (row strides differ)
TEST(IsaStepKernels, TileEpilogueEveryBuildMatchesTheReference) {
  Rng rng(14);
  const int64_t rows = 5, cols = 27, ldt = 32, ldc = 40;
  const std::vector<float> tile = random_vec(rows * ldt, rng), bias = random_vec(cols, rng), c0 = random_vec(rows * ldc, rng);
  using kernels::epilogue::Into;
  for (Into into : {Into::Set, Into::Relu, Into::Residual}) {
    for (cpu::Isa isa : runnable_isas()) {
      SCOPED_TRACE(std::string(cpu::isa_name(isa)) + " mode " + std::to_string(int(into)));
      namespace ke = kernels::epilogue;
      auto fn = isa == cpu::Isa::avx512 ? ke::avx512::bias_into
                : isa == cpu::Isa::avx2 ? ke::avx2::bias_into
                                        : ke::scalar::bias_into;
      std::vector<float> c = c0;
      fn(into, tile.data(), ldt, bias.data(), rows, cols, c.data(), ldc);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
          const float was = c0[size_t(i * ldc + j)];
          const float v = j < cols ? tile[size_t(i * ldt + j)] + bias[size_t(j)] : 0.0f;
          const float want = j >= cols ? was : into == Into::Set ? v : into == Into::Relu ? std::max(v, 0.0f) : was + v;
          EXPECT_EQ(c[size_t(i * ldc + j)], want) << i << "," << j;
        }
    }
  }
}

}  // namespace
