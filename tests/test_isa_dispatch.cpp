// Run-time instruction-set dispatch (cpu/isa.h, cpu/dispatch.h): the cap, and
// every build of each dispatched kernel that this CPU can run, called directly
// by its namespace, against a plain reference on the same data. The whole
// suite also runs under each cap (ATTN_ISA=scalar|avx2|avx512 ctest, README).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/nn/rnn_kernels.h"
#include "attn/nn/rows_gemm.h"
#include "attn/tensor/random.h"
#include "compare.h"
// models, recurrent GEMM and tensor kernels
#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "attn/models/output_loss_kernels.h"
#include "attn/models/rnnsearch_kernels.h"
#include "attn/models/vocab_topk.h"
#include "attn/nn/rnn_gemm.h"
#include "attn/tensor/elementwise_kernels.h"
#include "attn/tensor/softmax_kernels.h"

using namespace attn;
using attn::testing::compare;

namespace {

std::vector<cpu::Isa> runnable_isas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    if (i <= cpu::detected_isa()) out.push_back(i);
  return out;
}

std::vector<float> random_vec(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& e : v) e = rng.normal();
  return v;
}

TEST(IsaDispatch, NamesParseAndTheCapNeverRaises) {
  for (cpu::Isa i : {cpu::Isa::scalar, cpu::Isa::avx2, cpu::Isa::avx512})
    EXPECT_EQ(cpu::parse_isa(cpu::isa_name(i), "test"), i);
  try {
    cpu::parse_isa("sse9", "ATTN_ISA");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("ATTN_ISA: unknown instruction set 'sse9'"), std::string::npos) << e.what();
  }
  const cpu::Isa before = cpu::isa();
  EXPECT_LE(before, cpu::detected_isa());
  cpu::set_isa_cap(cpu::Isa::scalar);
  EXPECT_EQ(cpu::isa(), cpu::Isa::scalar);
  cpu::set_isa_cap(cpu::Isa::avx512);  // a cap above the CPU gives the CPU's level
  EXPECT_EQ(cpu::isa(), cpu::detected_isa());
  cpu::set_isa_cap(before);
  EXPECT_EQ(cpu::isa(), before);
}

// ATTN_ISA, when the suite runs under a cap, is what isa() reports
TEST(IsaDispatch, EnvironmentCapIsHonoured) {
  const char* env = std::getenv("ATTN_ISA");
  if (!env) GTEST_SKIP() << "ATTN_ISA not set";
  cpu::Isa cap = cpu::parse_isa(env, "ATTN_ISA");
  EXPECT_EQ(cpu::isa(), cap < cpu::detected_isa() ? cap : cpu::detected_isa());
}

// rows_gemm::gemm_wt of every build: C = A W^T over an output window, with and
// without accumulation, rows past kMaxRows and K not a multiple of any width
TEST(IsaDispatch, RowsGemmEveryBuildMatchesTheReference) {
  Rng rng(5);
  const int64_t m = 11, K = 77, O = 45, o0 = 3, o1 = 41;
  std::vector<float> a = random_vec(m * K, rng), w = random_vec(O * K, rng), c0 = random_vec(m * O, rng);
  for (bool acc : {false, true}) {
    std::vector<float> ref = c0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t o = o0; o < o1; ++o) {
        double s = acc ? ref[size_t(i * O + o)] : 0.0;
        for (int64_t k = 0; k < K; ++k) s += double(a[size_t(i * K + k)]) * w[size_t(o * K + k)];
        ref[size_t(i * O + o)] = float(s);
      }
    for (cpu::Isa isa : runnable_isas()) {
      std::vector<float> c = c0;
      auto fn = isa == cpu::Isa::avx512 ? rows_gemm::avx512::gemm_wt
                : isa == cpu::Isa::avx2 ? rows_gemm::avx2::gemm_wt
                                        : rows_gemm::scalar::gemm_wt;
      fn(m, K, a.data(), K, w.data(), K, o0, o1, c.data(), O, acc);
      EXPECT_LE(compare(c, ref, 1e-5, 1e-5).max_abs, 2e-5) << cpu::isa_name(isa) << " accumulate=" << acc;
    }
  }
}

// rnn_kernels::gru_forward of every build (fast math) against the exact
// reference build on the same inputs
TEST(IsaDispatch, GruGatesEveryBuildMatchesTheExactKernel) {
  Rng rng(6);
  const int64_t n = 5, H = 37;
  std::vector<float> gx = random_vec(n * 3 * H, rng), gh = random_vec(n * 3 * H, rng), bi = random_vec(3 * H, rng),
                     bh = random_vec(3 * H, rng), hp = random_vec(n * H, rng);
  auto run = [&](auto fn, rnn_kernels::Math math) {
    std::vector<float> gates = gx, ghn(size_t(n * H)), y(size_t(n * H)), next(size_t(n * H));
    std::vector<float*> yr, nr;
    for (int64_t j = 0; j < n; ++j) yr.push_back(y.data() + j * H), nr.push_back(next.data() + j * H);
    rnn_kernels::GruForward f;
    f.n = n, f.hidden = H, f.k_begin = 0, f.k_end = H, f.gates = gates.data(), f.gh = gh.data(), f.b_ih = bi.data(),
    f.b_hh = bh.data(), f.h_prev = hp.data(), f.ghn = ghn.data(), f.y_rows = yr.data(), f.next_rows = nr.data();
    fn(f, math);
    return y;
  };
  std::vector<float> ref = run(rnn_kernels::scalar::gru_forward, rnn_kernels::Math::Exact);
  for (cpu::Isa isa : runnable_isas()) {
    auto fn = isa == cpu::Isa::avx512 ? rnn_kernels::avx512::gru_forward
              : isa == cpu::Isa::avx2 ? rnn_kernels::avx2::gru_forward
                                      : rnn_kernels::scalar::gru_forward;
    EXPECT_LE(compare(run(fn, rnn_kernels::Math::Fast), ref, 1e-6, 1e-6).max_abs, 1e-6) << cpu::isa_name(isa);
  }
}

// ---- models, recurrent GEMM and tensor kernels ----

// ns::fn of the build for isa, called by namespace
#define ISA_BUILD(ns, fn, isa) \
  ((isa) == cpu::Isa::avx512 ? ns::avx512::fn : (isa) == cpu::Isa::avx2 ? ns::avx2::fn : ns::scalar::fn)

// log sum exp of x [n] in double
double lse_ref(const float* x, int64_t n) {
  double m = -INFINITY, s = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, double(x[i]));
  for (int64_t i = 0; i < n; ++i) s += std::exp(double(x[i]) - m);
  return m + std::log(s);
}

// models::log_sum_exp_row, top_k_row and top_k_add of every build, rows of lengths
// around the vector widths (tails in every build). lse: a float sum of V exps
// (each <= 1.25 ulp) drifts ~sqrt(V) ulp of the sum, 1e-5 absolute on lse for
// V ~ 1000. The top k exactly: each value is one float subtraction x - shift in
// every build, ties (quarter steps give many) go to the lower token.
TEST(IsaDispatch, VocabTopKEveryBuildMatchesTheReference) {
  Rng rng(7);
  const float shift = 0.5f;
  for (int64_t V : {1, 5, 16, 37, 1003}) {
    std::vector<float> x(static_cast<size_t>(V));
    for (auto& e : x) e = std::round(12.0f * rng.normal()) / 4.0f;
    const int64_t k = std::min<int64_t>(V, 6), h = V / 2;
    std::vector<int> order(static_cast<size_t>(V));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return x[size_t(a)] > x[size_t(b)]; });
    for (cpu::Isa isa : runnable_isas()) {
      const std::string what = std::string(cpu::isa_name(isa)) + " V=" + std::to_string(V);
      EXPECT_NEAR(ISA_BUILD(models, log_sum_exp_row, isa)(x.data(), V), lse_ref(x.data(), V), 1e-5) << what;
      std::vector<int> tok(static_cast<size_t>(k), -1), tok2(static_cast<size_t>(k), -1);
      std::vector<float> val(static_cast<size_t>(k)), val2(static_cast<size_t>(k));
      ISA_BUILD(models, top_k_row, isa)(x.data(), V, shift, k, tok.data(), val.data());
      // the same list from two calls, the second with a token offset
      models::TopKList list{tok2.data(), val2.data(), k};
      ISA_BUILD(models, top_k_add, isa)(list, x.data(), h, 0, shift);
      ISA_BUILD(models, top_k_add, isa)(list, x.data() + h, V - h, int(h), shift);
      EXPECT_EQ(list.n, k) << what;
      for (int64_t j = 0; j < k; ++j) {
        const int want = order[size_t(j)];
        EXPECT_EQ(tok[size_t(j)], want) << what << " rank " << j;
        EXPECT_EQ(val[size_t(j)], x[size_t(want)] - shift) << what << " rank " << j;
        EXPECT_EQ(tok2[size_t(j)], want) << what << " (two calls) rank " << j;
        EXPECT_EQ(val2[size_t(j)], x[size_t(want)] - shift) << what << " (two calls) rank " << j;
      }
    }
  }
}

// output_loss_kernels of every build against double: loss_block (softmax,
// label-smoothed loss and dlogits of the rows that count), add_column_sums
// (the same float additions in the same order as a plain loop: exact) and
// log_softmax_rows. V = 53 leaves a vector tail in every build. Tolerances:
// lse ~ 5 is good to a few float ulps (~1e-6), so a row's loss to ~2e-6;
// p and dlogits (<= 1) to float rounding.
TEST(IsaDispatch, OutputLossKernelsEveryBuildMatchTheReference) {
  Rng rng(8);
  const int64_t N = 10, V = 53, n = 7;
  const float eps = 0.1f, inv_count = 1.0f / float(n);
  const std::vector<int64_t> rows = {0, 2, 3, 5, 6, 8, 9};
  std::vector<float> targets(static_cast<size_t>(N));
  for (auto& t : targets) t = float(rng.below(uint64_t(V)));
  std::vector<float> logits = random_vec(n * V, rng);
  for (auto& e : logits) e *= 3.0f;
  std::vector<float> ref_p(size_t(n * V)), ref_d(size_t(n * V)), ref_ls(size_t(n * V));
  double ref_total = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* x = logits.data() + i * V;
    const double lse = lse_ref(x, V);
    const int64_t t = int64_t(targets[size_t(rows[size_t(i)])]);
    double mean = 0;
    for (int64_t c = 0; c < V; ++c) mean += x[c] / double(V);
    ref_total += (1 - double(eps)) * (lse - x[t]) + double(eps) * (lse - mean);
    for (int64_t c = 0; c < V; ++c) {
      const double p = std::exp(double(x[c]) - lse);
      ref_p[size_t(i * V + c)] = float(p);
      ref_d[size_t(i * V + c)] = float((p - double(eps) / V - (c == t ? 1 - double(eps) : 0.0)) * inv_count);
      ref_ls[size_t(i * V + c)] = float(double(x[c]) - lse);
    }
  }
  const std::vector<float> sums0 = random_vec(V, rng);
  for (cpu::Isa isa : runnable_isas()) {
    const std::string what = cpu::isa_name(isa);
    for (bool grad : {false, true}) {
      std::vector<float> lg = logits;
      models::output_loss_kernels::LossBlock b;
      b.logits = lg.data(), b.n = n, b.V = V, b.targets = targets.data(), b.rows = rows.data(), b.eps = eps,
      b.inv_count = inv_count, b.grad = grad;
      EXPECT_NEAR(ISA_BUILD(models::output_loss_kernels, loss_block, isa)(b), ref_total, 2e-6 * n) << what;
      EXPECT_ABS_CLOSE(lg, grad ? ref_d : ref_p, 1e-6, what + (grad ? " dlogits" : " p"));
    }
    // the column sums of the reference's dlogits, added to sums0
    std::vector<float> sums = sums0, expect = sums0;
    for (int64_t i = 0; i < n; ++i)
      for (int64_t c = 0; c < V; ++c) expect[size_t(c)] += ref_d[size_t(i * V + c)];
    ISA_BUILD(models::output_loss_kernels, add_column_sums, isa)(ref_d.data(), n, V, sums.data());
    EXPECT_EQ(sums, expect) << what;
    std::vector<float> ls(size_t(n * V));
    ISA_BUILD(models::output_loss_kernels, log_softmax_rows, isa)(logits.data(), n, V, ls.data());
    EXPECT_ABS_CLOSE(ls, ref_ls, 5e-6, what + " log_softmax_rows");
  }
}

// rnnsearch_kernels::attend_row and attend_row_backward of every build against
// double. A = 21 and Dv = 19 leave vector tails in every build. The score is
// v^T tanh_rational(q + k) (~6 ulp per tanh, simd/math.h), so scores, weights
// and the context carry ~A * 6 ulp ~ 1e-5 of absolute error.
TEST(IsaDispatch, RnnSearchAttentionEveryBuildMatchesTheReference) {
  Rng rng(9);
  const int64_t A = 21, Dv = 19, S = 9, L = 7;
  const std::vector<float> q = random_vec(A, rng), k = random_vec(S * A, rng), v = random_vec(A, rng),
                           h = random_vec(S * Dv, rng), dc = random_vec(Dv, rng);
  const std::vector<float> dk0 = random_vec(S * A, rng), dh0 = random_vec(S * Dv, rng), dq0 = random_vec(A, rng),
                           dv0 = random_vec(A, rng);
  // forward: e_j = v^T tanh(q + k_j), w = softmax over j < L (0 beyond), c = sum_j w_j h_j
  std::vector<double> e(static_cast<size_t>(L));
  double mx = -INFINITY, sum = 0;
  for (int64_t j = 0; j < L; ++j) {
    for (int64_t a = 0; a < A; ++a)
      e[size_t(j)] += v[size_t(a)] * std::tanh(double(q[size_t(a)]) + k[size_t(j * A + a)]);
    mx = std::max(mx, e[size_t(j)]);
  }
  for (int64_t j = 0; j < L; ++j) sum += std::exp(e[size_t(j)] - mx);
  std::vector<float> ref_w(static_cast<size_t>(S), 0.0f), ref_c(static_cast<size_t>(Dv), 0.0f);
  for (int64_t j = 0; j < L; ++j) ref_w[size_t(j)] = float(std::exp(e[size_t(j)] - mx) / sum);
  for (int64_t d = 0; d < Dv; ++d) {
    double c = 0;
    for (int64_t j = 0; j < L; ++j) c += double(ref_w[size_t(j)]) * h[size_t(j * Dv + d)];
    ref_c[size_t(d)] = float(c);
  }
  // backward from dc, with the reference weights: da_j = dc . h_j, dh_j += w_j dc,
  // de_j = w_j (da_j - sum_k w_k da_k), dz = de_j v (1 - tanh^2) into dk_j, dq; dv += de_j tanh
  std::vector<float> rdk = dk0, rdh = dh0, rdq = dq0, rdv = dv0;
  std::vector<double> da(static_cast<size_t>(L));
  double dot = 0;
  for (int64_t j = 0; j < L; ++j) {
    for (int64_t d = 0; d < Dv; ++d) {
      da[size_t(j)] += double(dc[size_t(d)]) * h[size_t(j * Dv + d)];
      rdh[size_t(j * Dv + d)] += float(double(ref_w[size_t(j)]) * dc[size_t(d)]);
    }
    dot += ref_w[size_t(j)] * da[size_t(j)];
  }
  for (int64_t j = 0; j < L; ++j) {
    const double de = ref_w[size_t(j)] * (da[size_t(j)] - dot);
    for (int64_t a = 0; a < A; ++a) {
      const double t = std::tanh(double(q[size_t(a)]) + k[size_t(j * A + a)]), dz = de * v[size_t(a)] * (1 - t * t);
      rdk[size_t(j * A + a)] += float(dz);
      rdq[size_t(a)] += float(dz);
      rdv[size_t(a)] += float(de * t);
    }
  }
  for (cpu::Isa isa : runnable_isas()) {
    const std::string what = cpu::isa_name(isa);
    std::vector<float> w(static_cast<size_t>(S), -1.0f), c(static_cast<size_t>(Dv), -1.0f);
    ISA_BUILD(models::rnnsearch_kernels, attend_row, isa)(q.data(), k.data(), v.data(), A, h.data(), Dv, L, S,
                                                          w.data(), c.data(), k.data(), S * A);
    EXPECT_ABS_CLOSE(w, ref_w, 2e-5, what + " weights");
    EXPECT_ABS_CLOSE(c, ref_c, 2e-5, what + " context");
    std::vector<float> dk = dk0, dh = dh0, dq = dq0, dv = dv0, scratch(static_cast<size_t>(S));
    models::rnnsearch_kernels::AttendBackward ab;
    ab.A = A, ab.Dv = Dv, ab.L = L, ab.q = q.data(), ab.keys = k.data(), ab.v = v.data(), ab.values = h.data(),
    ab.w = ref_w.data(), ab.dc = dc.data(), ab.dkeys = dk.data(), ab.dvalues = dh.data(), ab.dq = dq.data(),
    ab.dv = dv.data(), ab.da = scratch.data();
    ISA_BUILD(models::rnnsearch_kernels, attend_row_backward, isa)(ab);
    EXPECT_ABS_CLOSE(dk, rdk, 2e-5, what + " d keys");
    EXPECT_ABS_CLOSE(dh, rdh, 2e-6, what + " d values");  // no tanh on this path: float rounding
    EXPECT_ABS_CLOSE(dq, rdq, 2e-5, what + " d query");
    EXPECT_ABS_CLOSE(dv, rdv, 2e-5, what + " d v");
  }
}

// The search step's rnnsearch_kernels::tanh_columns, logits_tile and
// lse_of_tiles of every build. tanh (simd/math.h, <= ~1.4 ulp): 3e-7 on values
// <= 1. A logits tile: the bias added exactly (one float addition), the max
// exactly, sum exp of 37 terms to ~1e-6 relative; each row's top k merges its
// list with the tile's tokens exactly (value descending, ties to the earlier
// token). lse_of_tiles: float sums of 21 tiles, 1e-5 absolute.
TEST(IsaDispatch, RnnSearchStepKernelsEveryBuildMatchTheReference) {
  Rng rng(10);
  const int64_t n = 3, ld = 40, c0 = 5, c1 = 37, cols = 37, k = 4, T = 21;
  const int first = 100;
  std::vector<float> t0 = random_vec(n * ld, rng), tile0 = random_vec(n * ld, rng), bias = random_vec(cols, rng);
  for (auto& e : t0) e *= 3.0f;
  for (auto& e : tile0) e = std::round(8.0f * e) / 4.0f;  // ties
  for (auto& e : bias) e = std::round(4.0f * e) / 4.0f;
  std::vector<float> ref_t = t0;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = c0; c < c1; ++c) ref_t[size_t(i * ld + c)] = float(std::tanh(double(t0[size_t(i * ld + c)])));
  // the lists before the tile: row 0 empty, row 1 two entries, row 2 full and above the whole tile
  const std::vector<int> tok0 = {-1, -1, -1, -1, 3, 7, -1, -1, 1, 2, 4, 9};
  const std::vector<float> val0 = {0, 0, 0, 0, 1.25f, -0.5f, 0, 0, 90, 80, 70, 60};
  const std::vector<int64_t> n0 = {0, 2, 4};
  std::vector<float> ref_x = tile0, ref_max(static_cast<size_t>(n)), ref_sum(static_cast<size_t>(n));
  std::vector<int> ref_tok = tok0;
  std::vector<float> ref_val = val0;
  for (int64_t r = 0; r < n; ++r) {
    std::vector<std::pair<float, int>> cand;
    for (int64_t j = 0; j < n0[size_t(r)]; ++j) cand.push_back({val0[size_t(r * k + j)], tok0[size_t(r * k + j)]});
    float mx = -INFINITY;
    for (int64_t c = 0; c < cols; ++c) {
      const float y = ref_x[size_t(r * ld + c)] += bias[size_t(c)];
      mx = std::max(mx, y);
      cand.push_back({y, first + int(c)});
    }
    double s = 0;
    for (int64_t c = 0; c < cols; ++c) s += std::exp(double(ref_x[size_t(r * ld + c)]) - mx);
    ref_max[size_t(r)] = mx, ref_sum[size_t(r)] = float(s);
    std::stable_sort(cand.begin(), cand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int64_t j = 0; j < k; ++j)
      ref_tok[size_t(r * k + j)] = cand[size_t(j)].second, ref_val[size_t(r * k + j)] = cand[size_t(j)].first;
  }
  const std::vector<float> tmax = random_vec(T, rng);
  std::vector<float> tsum(static_cast<size_t>(T));
  for (auto& e : tsum) e = rng.uniform(1.0f, 50.0f);
  double m = -INFINITY, s = 0;
  for (float e : tmax) m = std::max(m, double(e));
  for (int64_t j = 0; j < T; ++j) s += tsum[size_t(j)] * std::exp(double(tmax[size_t(j)]) - m);
  for (cpu::Isa isa : runnable_isas()) {
    const std::string what = cpu::isa_name(isa);
    std::vector<float> t = t0;
    ISA_BUILD(models::rnnsearch_kernels, tanh_columns, isa)(t.data(), ld, n, c0, c1);
    EXPECT_ABS_CLOSE(t, ref_t, 3e-7, what + " tanh_columns");
    std::vector<float> x = tile0, tm(size_t(2 * n), -1.0f), ts(size_t(2 * n), -1.0f), val = val0;
    std::vector<int> tok = tok0;
    std::vector<int64_t> nn = n0;
    models::rnnsearch_kernels::LogitsTile lt;
    lt.x = x.data(), lt.ld = ld, lt.m = n, lt.cols = cols, lt.first_token = first, lt.bias = bias.data();
    lt.tile_max = tm.data(), lt.tile_sum = ts.data(), lt.stats_ld = 2;
    lt.tokens = tok.data(), lt.values = val.data(), lt.n = nn.data(), lt.k = k;
    ISA_BUILD(models::rnnsearch_kernels, logits_tile, isa)(lt);
    EXPECT_EQ(x, ref_x) << what;
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(tm[size_t(2 * r)], ref_max[size_t(r)]) << what << " row " << r;
      EXPECT_NEAR(ts[size_t(2 * r)], ref_sum[size_t(r)], 1e-6 * ref_sum[size_t(r)]) << what << " row " << r;
      EXPECT_EQ(nn[size_t(r)], k) << what << " row " << r;
    }
    EXPECT_EQ(tok, ref_tok) << what;
    EXPECT_EQ(val, ref_val) << what;
    EXPECT_NEAR(ISA_BUILD(models::rnnsearch_kernels, lse_of_tiles, isa)(tmax.data(), tsum.data(), T),
                m + std::log(s), 1e-5)
        << what;
  }
}

// rnn_gemm::kernels::gemm_packed and panel_rows of every build on panels packed by
// rnn_gemm::pack_transposed: m = 13 rows (one full block of 12 or two of 6 and a
// remainder), two groups of width 70 (two full panels and a partial one), column
// slices from 0 and from 32, with and without accumulation; against double (the
// tolerance of the rows_gemm test above: K = 37 products of N(0,1) values).
TEST(IsaDispatch, RnnGemmEveryBuildMatchesTheReference) {
  Rng rng(11);
  const int64_t m = 13, K = 37, groups = 2, width = 70, GW = groups * width;
  const std::vector<float> w = random_vec(GW * K, rng), a = random_vec(m * K, rng), c0 = random_vec(m * GW, rng);
  const rnn_gemm::PackedWeight p = rnn_gemm::pack_transposed(w.data(), K, groups, width);
  rnn_gemm::kernels::Panels b;
  b.data = p.data.data(), b.K = K, b.groups = groups, b.width = width, b.blocks = p.blocks;
  auto dot = [&](int64_t i, int64_t o) {
    double s = 0;
    for (int64_t j = 0; j < K; ++j) s += double(a[size_t(i * K + j)]) * w[size_t(o * K + j)];
    return s;
  };
  for (bool acc : {false, true})
    for (int64_t k0 : {0, 32}) {
      const int64_t k1 = k0 == 0 ? width : 64;
      std::vector<float> ref = c0;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t g = 0; g < groups; ++g)
          for (int64_t col = k0; col < k1; ++col) {
            float& r = ref[size_t(i * GW + g * width + col)];
            r = float((acc ? double(r) : 0.0) + dot(i, g * width + col));
          }
      for (cpu::Isa isa : runnable_isas()) {
        std::vector<float> c = c0;
        ISA_BUILD(rnn_gemm::kernels, gemm_packed, isa)(m, a.data(), K, b, k0, k1, c.data(), GW, acc);
        EXPECT_ABS_CLOSE(c, ref, 2e-5, std::string(cpu::isa_name(isa)) + " k0=" + std::to_string(k0) +
                                           " accumulate=" + std::to_string(acc));
      }
    }
  // one partial panel (group 1, block 2: columns 64..69) into a tile of its own
  const int64_t cols = width - 64;
  std::vector<float> ref(size_t(m * cols));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < cols; ++j) ref[size_t(i * cols + j)] = float(dot(i, width + 64 + j));
  for (cpu::Isa isa : runnable_isas()) {
    std::vector<float> c(size_t(m * cols), -1.0f);
    ISA_BUILD(rnn_gemm::kernels, panel_rows, isa)(m, a.data(), K, K, p.panel(1, 2), cols, c.data(), cols, false);
    EXPECT_ABS_CLOSE(c, ref, 2e-5, std::string(cpu::isa_name(isa)) + " panel_rows");
  }
}

// kernels::elementwise of every build. n = 33001 > kParallelGrain: the threaded
// loops, with a tail in every build. exp, log and sqrt are libm's expf / logf
// and sqrtf, so exactly std::exp / std::log / std::sqrt on float; tanh and
// sigmoid are simd/math.h's Cephes forms (<= ~3 ulp) against double: 1e-6
// relative (8 ulp, for the x86-64 baseline's two roundings where the others fuse
// a multiply-add); NaN passes through. The binary ops are one float operation:
// exact. add_scaled and affine fuse a * x + b into one rounding where the
// target has FMA, and round twice without: an error of 1 ulp of the largest
// operand (cancellation makes it large relative to small results).
TEST(IsaDispatch, ElementwiseKernelsEveryBuildMatchTheReference) {
  using kernels::Binary;
  using kernels::Unary;
  namespace ew = kernels::elementwise;
  Rng rng(12);
  const int64_t n = 33001;
  std::vector<float> x = random_vec(n, rng), y = random_vec(n, rng);
  std::vector<float> pos(static_cast<size_t>(n)), mask(static_cast<size_t>(n));
  for (auto& e : x) e *= 4.0f;
  for (int64_t i = 0; i < n; ++i) pos[size_t(i)] = std::fabs(x[size_t(i)]) + 1e-3f, mask[size_t(i)] = float(i % 3 != 0);
  for (cpu::Isa isa : runnable_isas()) {
    const std::string what = cpu::isa_name(isa);
    std::vector<float> o(static_cast<size_t>(n)), ref(static_cast<size_t>(n));
    auto un = [&](Unary op, const std::vector<float>& in, auto f) {
      ISA_BUILD(ew, unary, isa)(op, in.data(), o.data(), n);
      for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = f(in[size_t(i)]);
    };
    un(Unary::Exp, x, [](float v) { return std::exp(v); });
    EXPECT_EQ(o, ref) << what << " exp";
    un(Unary::Log, pos, [](float v) { return std::log(v); });
    EXPECT_EQ(o, ref) << what << " log";
    un(Unary::Sqrt, pos, [](float v) { return std::sqrt(v); });
    EXPECT_EQ(o, ref) << what << " sqrt";
    un(Unary::Relu, x, [](float v) { return v > 0 ? v : 0.0f; });
    EXPECT_EQ(o, ref) << what << " relu";
    un(Unary::Tanh, x, [](float v) { return float(std::tanh(double(v))); });
    EXPECT_REL_CLOSE(o, ref, 1e-6, 0, 1e-30, what + " tanh");
    un(Unary::Sigmoid, x, [](float v) { return float(1 / (1 + std::exp(-double(v)))); });
    EXPECT_REL_CLOSE(o, ref, 1e-6, 0, 1e-30, what + " sigmoid");
    const float nan = std::nanf("");
    for (Unary op : {Unary::Tanh, Unary::Sigmoid}) {
      float got = 0;
      ISA_BUILD(ew, unary, isa)(op, &nan, &got, 1);
      EXPECT_TRUE(std::isnan(got)) << what;
    }
    ISA_BUILD(ew, binary, isa)(Binary::Div, x.data(), y.data(), o.data(), n);
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = x[size_t(i)] / y[size_t(i)];
    EXPECT_EQ(o, ref) << what << " div";
    std::vector<float> d = y;
    ISA_BUILD(ew, add_scaled, isa)(d.data(), x.data(), 0.3f, n);
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = float(double(y[size_t(i)]) + double(0.3f) * x[size_t(i)]);
    EXPECT_NORMWISE_CLOSE(d, ref, 1.2e-7, what + " add_scaled");
    ISA_BUILD(ew, affine, isa)(x.data(), o.data(), n, 0.3f, -1.5f);
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = float(double(0.3f) * x[size_t(i)] - 1.5);
    EXPECT_NORMWISE_CLOSE(o, ref, 1.2e-7, what + " affine");
    ISA_BUILD(ew, masked_fill, isa)(x.data(), mask.data(), -7.0f, o.data(), n);
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = mask[size_t(i)] != 0 ? x[size_t(i)] : -7.0f;
    EXPECT_EQ(o, ref) << what << " masked_fill";
  }
}

// kernels::elementwise::binary_rows and sum_rows_to of every build on a broadcast:
// out [3, 4, 21] = a [3, 1, 21] op b [4, 1] (rows of a contiguous, b one value
// per row), and the reductions of out back to [4, 1] (rows summed to one value)
// and to [1, 21] (rows added to one row).
TEST(IsaDispatch, ElementwiseBroadcastEveryBuildMatchesTheReference) {
  namespace ew = kernels::elementwise;
  Rng rng(13);
  const int64_t I = 3, J = 4, L = 21;
  const std::vector<float> a = random_vec(I * L, rng), b = random_vec(J, rng), g = random_vec(I * J * L, rng);
  ew::Rows r;
  r.rank = 3, r.dims[0] = I, r.dims[1] = J, r.dims[2] = L;
  r.st_a[0] = L, r.st_a[1] = 0, r.st_a[2] = 1;  // a [3, 1, 21]
  r.st_b[0] = 0, r.st_b[1] = 1, r.st_b[2] = 0;  // b [4, 1] as [1, 4, 1]
  std::vector<float> ref(size_t(I * J * L)), to_j(size_t(J), 0.0f), to_l(size_t(L), 0.0f);
  std::vector<double> sj(static_cast<size_t>(J)), sl(static_cast<size_t>(L));
  for (int64_t i = 0; i < I; ++i)
    for (int64_t j = 0; j < J; ++j)
      for (int64_t l = 0; l < L; ++l) {
        ref[size_t((i * J + j) * L + l)] = a[size_t(i * L + l)] - b[size_t(j)];
        sj[size_t(j)] += g[size_t((i * J + j) * L + l)];
        sl[size_t(l)] += g[size_t((i * J + j) * L + l)];
      }
  for (int64_t j = 0; j < J; ++j) to_j[size_t(j)] = float(sj[size_t(j)]);
  for (int64_t l = 0; l < L; ++l) to_l[size_t(l)] = float(sl[size_t(l)]);
  for (cpu::Isa isa : runnable_isas()) {
    const std::string what = cpu::isa_name(isa);
    std::vector<float> o(size_t(I * J * L), 0.0f);
    ISA_BUILD(ew, binary_rows, isa)(kernels::Binary::Sub, a.data(), b.data(), o.data(), r);
    EXPECT_EQ(o, ref) << what;
    ew::Rows sr = r;  // g [3, 4, 21] into [4, 1] (strides {0, 1, 0}) and into [1, 21] ({0, 0, 1})
    sr.st_a[0] = 0, sr.st_a[1] = 1, sr.st_a[2] = 0;
    std::vector<float> oj(static_cast<size_t>(J), 0.0f), ol(static_cast<size_t>(L), 0.0f);
    ISA_BUILD(ew, sum_rows_to, isa)(g.data(), oj.data(), sr);
    sr.st_a[0] = 0, sr.st_a[1] = 0, sr.st_a[2] = 1;
    ISA_BUILD(ew, sum_rows_to, isa)(g.data(), ol.data(), sr);
    EXPECT_ABS_CLOSE(oj, to_j, 1e-5, what + " sum to [4, 1]");  // 63 terms of N(0, 1)
    EXPECT_ABS_CLOSE(ol, to_l, 1e-5, what + " sum to [1, 21]");
  }
}

// kernels::softmax_rows of every build against double: rows of 23 with a mask,
// one row fully masked (zeros), softmax and log-softmax, forward and backward.
// The forward sums 23 float exps (~2 ulp of the result); the backward works in
// double. 2e-6 absolute on values of magnitude <= ~10.
TEST(IsaDispatch, SoftmaxRowsEveryBuildMatchTheReference) {
  namespace sm = kernels::softmax_rows;
  Rng rng(14);
  const int64_t rows = 5, n = 23;
  std::vector<float> x = random_vec(rows * n, rng), dy = random_vec(rows * n, rng), mask(size_t(rows * n));
  for (auto& e : x) e *= 3.0f;
  for (int64_t i = 0; i < rows * n; ++i) mask[size_t(i)] = float(i / n == 2 ? 0 : (i * 7) % 5 != 0);
  for (bool log : {false, true}) {
    std::vector<float> ref(size_t(rows * n), 0.0f), dref(size_t(rows * n), 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      const float* xr = x.data() + r * n;
      const float* mr = mask.data() + r * n;
      double mx = -INFINITY, s = 0;
      for (int64_t i = 0; i < n; ++i)
        if (mr[i] != 0) mx = std::max(mx, double(xr[i]));
      if (mx == -INFINITY) continue;  // fully masked: zeros
      for (int64_t i = 0; i < n; ++i)
        if (mr[i] != 0) s += std::exp(xr[i] - mx);
      for (int64_t i = 0; i < n; ++i)
        if (mr[i] != 0) ref[size_t(r * n + i)] = float(log ? xr[i] - mx - std::log(s) : std::exp(xr[i] - mx) / s);
      // backward from the reference output y
      const float* yr = ref.data() + r * n;
      const float* dr = dy.data() + r * n;
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) acc += log ? (mr[i] != 0 ? double(dr[i]) : 0.0) : double(dr[i]) * yr[i];
      for (int64_t i = 0; i < n; ++i)
        if (mr[i] != 0)
          dref[size_t(r * n + i)] = float(log ? dr[i] - std::exp(double(yr[i])) * acc : yr[i] * (dr[i] - acc));
    }
    for (cpu::Isa isa : runnable_isas()) {
      const std::string what = std::string(cpu::isa_name(isa)) + (log ? " log-softmax" : " softmax");
      std::vector<float> o(size_t(rows * n), -1.0f), dx(size_t(rows * n), -1.0f);
      ISA_BUILD(sm, forward, isa)(x.data(), mask.data(), rows, n, log, o.data());
      EXPECT_ABS_CLOSE(o, ref, 2e-6, what);
      ISA_BUILD(sm, backward, isa)(ref.data(), dy.data(), mask.data(), rows, n, log, dx.data());
      EXPECT_ABS_CLOSE(dx, dref, 2e-6, what + " backward");
    }
  }
}

}  // namespace
