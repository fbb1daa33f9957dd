// Run-time instruction-set dispatch (cpu/isa.h, kernels/dispatch.h): the cap, and
// every build of each dispatched kernel that this CPU can run, called directly
// by its namespace, against a plain reference on the same data. The whole
// suite also runs under each cap (ATTN_ISA=scalar|avx2|avx512 ctest, docs/library.md).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <vector>

#include "attn/cpu/isa.h"
#include "attn/kernels/rnn_gates.h"
#include "attn/kernels/rows_gemm.h"
#include "attn/tensor/random.h"
#include "compare.h"
#include "isa_builds.h"
// models, recurrent GEMM and tensor kernels
#include <algorithm>
#include <numeric>
#include <string>
#include <utility>

#include "attn/kernels/elementwise.h"
#include "attn/kernels/output_loss.h"
#include "attn/kernels/rnnsearch_rows.h"
#include "attn/kernels/softmax.h"
#include "attn/kernels/vocab_topk.h"
#include "attn/nn/rnn_gemm.h"

using namespace attn;
using attn::testing::compare;

namespace {

using attn::testing::random_vec;
using attn::testing::runnable_isas;

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

// rnnsearch_kernels::attend_row (and its parts attention_weights_row and
// weighted_rows_add) and attend_row_backward of every build against
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
    // the weights alone (the folded search step), and the context as a weighted sum of
    // rows (h read with stride Dv + 2, into a c that already holds a value: out +=)
    std::vector<float> w2(static_cast<size_t>(S), -1.0f);
    ISA_BUILD(models::rnnsearch_kernels, attention_weights_row, isa)(q.data(), k.data(), v.data(), A, L, S,
                                                                     w2.data(), h.data(), Dv);
    EXPECT_ABS_CLOSE(w2, ref_w, 2e-5, what + " weights alone");
    std::vector<float> hs(static_cast<size_t>(S * (Dv + 2)), 1e6f), c2(static_cast<size_t>(Dv), 0.5f),
        ref_c2 = ref_c;
    for (int64_t j = 0; j < L; ++j)
      for (int64_t d = 0; d < Dv; ++d) hs[size_t(j * (Dv + 2) + d)] = h[size_t(j * Dv + d)];
    for (float& x : ref_c2) x += 0.5f;
    ISA_BUILD(models::rnnsearch_kernels, weighted_rows_add, isa)(ref_w.data(), L, hs.data(), Dv + 2, Dv, c2.data(),
                                                                 k.data(), S * A);
    EXPECT_ABS_CLOSE(c2, ref_c2, 2e-5, what + " weighted rows");
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

// ---- the attention kernels ----
// Every build of each kernel against the double loops of attention_reference.h
// (or one written here), on shapes with a tail in every vector loop. Scratch
// memory comes filled with NaN: a kernel that reads scratch it did not write
// shows it. Tolerances: float accumulation against double, the same for every
// build (tests/test_attention_fused.cpp and test_attention_reference.cpp use them).
#include "attention_reference.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/additive_scores.h"
#include "attn/kernels/additive_step.h"
#include "attn/kernels/flash.h"

namespace {

using attn::testing::AdditiveReference;
using attn::testing::SdpaMask;
using attn::testing::SdpaReference;
namespace flash = attn::attention::flash;

// A kernel's scratch from a vector, handed out full of NaN
attention::KernelScratch nan_scratch(std::vector<float>& buf) {
  return {[](void* ctx, int64_t floats) -> float* {
            auto* v = static_cast<std::vector<float>*>(ctx);
            v->assign(size_t(floats), std::nanf(""));
            return v->data();
          },
          &buf};
}

std::vector<float> to_vec(const Tensor& t) { return std::vector<float>(t.data(), t.data() + t.numel()); }

struct FlashCase {
  const char* label;
  int64_t B, H, Lq, Lk, D, Dv;
  bool causal = false;
  bool lengths = false;  // key lengths, one of them 0 when B > 1
  int keep = 0;          // 0 none, 1 [B, 1, 1, Lk], 2 [B, H, Lq, Lk] with a fully masked row
  float dropout = 0.0f;
  bool packed = false;  // q, k, v inside one [B, L, 3, H, D] buffer (strided rows; Lq = Lk, D = Dv)
};

const FlashCase kFlashCases[] = {
    // 32-lane query blocks; D, Dv, Lk not multiples of any vector width (padded row copies)
    {"short, padding mask, dropout", 2, 2, 29, 70, 20, 12, false, false, 1, 0.3f},
    // 64-lane blocks with a partial last block, causal, a row of length 0
    {"causal, lengths", 2, 1, 67, 131, 16, 24, true, true},
    // D = 64: Q and dO rows used in place; a query that sees no key
    {"full mask, in place", 1, 2, 70, 45, 64, 64, false, false, 2},
    // one (b, h) on two threads: key ranges and the dQ partial sums
    {"one head, key ranges, dropout", 1, 1, 130, 200, 32, 48, false, true, 0, 0.2f},
    // the kernel reading strided keys and values itself (the glue copies them first)
    {"packed heads, causal", 2, 2, 40, 40, 8, 8, true, false, 0, 0.0f, true},
};

// contiguous [B, H, L, W] <-> the element (b, h, i, d) at l.sb b + l.sh h + l.si i + d of buf
void scatter(const float* src, int64_t B, int64_t H, int64_t L, int64_t W, flash::Layout l, float* buf) {
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < W; ++d) buf[(bh / H) * l.sb + (bh % H) * l.sh + i * l.si + d] = src[(bh * L + i) * W + d];
}
std::vector<float> gather(const float* buf, int64_t B, int64_t H, int64_t L, int64_t W, flash::Layout l) {
  std::vector<float> out(size_t(B * H * L * W));
  for (int64_t bh = 0; bh < B * H; ++bh)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t d = 0; d < W; ++d)
        out[size_t((bh * L + i) * W + d)] = buf[(bh / H) * l.sb + (bh % H) * l.sh + i * l.si + d];
  return out;
}

// flash::kernels forward and backward of every build against sdpa_reference
TEST(IsaDispatch, FlashEveryBuildMatchesTheReference) {
  const int saved_threads = num_threads();
  set_num_threads(2);  // one (b, h) splits its keys into ranges
  for (const FlashCase& c : kFlashCases) {
    SCOPED_TRACE(c.label);
    Rng rng(31 + uint64_t(c.Lq));
    Tensor q = randn({c.B, c.H, c.Lq, c.D}, rng), k = randn({c.B, c.H, c.Lk, c.D}, rng),
           v = randn({c.B, c.H, c.Lk, c.Dv}, rng), dout = randn({c.B, c.H, c.Lq, c.Dv}, rng);
    SdpaMask mask;
    mask.causal = c.causal;
    std::vector<float> lengths;
    for (int64_t b = 0; c.lengths && b < c.B; ++b) {
      lengths.push_back(b == 1 ? 0.0f : float(1 + rng.below(uint64_t(c.Lk))));
      mask.key_lengths.push_back(int64_t(lengths.back()));
    }
    if (c.keep == 1) mask.keep = Tensor::empty({c.B, 1, 1, c.Lk});
    if (c.keep == 2) mask.keep = Tensor::empty({c.B, c.H, c.Lq, c.Lk});
    for (int64_t i = 0; c.keep && i < mask.keep.numel(); ++i) mask.keep.data()[i] = rng.uniform() < 0.3f ? 0.0f : 1.0f;
    if (c.keep == 2)
      for (int64_t j = 0; j < c.Lk; ++j) mask.keep.data()[3 * c.Lk + j] = 0.0f;  // row 3 sees nothing
    const uint64_t seed = 4242;
    const float scale = 1.0f / std::sqrt(float(c.D));
    const SdpaReference ref = attn::testing::sdpa_reference(q, k, v, scale, mask, c.dropout, seed, dout);

    flash::Problem p;
    p.B = c.B, p.H = c.H, p.Lq = c.Lq, p.Lk = c.Lk, p.D = c.D, p.Dv = c.Dv, p.scale = scale;
    p.causal = c.causal, p.dropout = c.dropout, p.seed = seed;
    p.key_lengths = c.lengths ? lengths.data() : nullptr;
    if (c.keep) {
      p.mask = mask.keep.data();
      p.mask_sb = c.keep == 1 ? c.Lk : c.H * c.Lq * c.Lk, p.mask_sh = c.keep == 1 ? 0 : c.Lq * c.Lk;
      p.mask_si = c.keep == 1 ? 0 : c.Lk, p.mask_sj = 1;
    }
    const int64_t E = c.H * c.D, L = c.Lq;
    std::vector<float> in, gin;  // q, k, v (and their gradients) in one buffer each
    if (c.packed) {
      p.lq = p.lk = p.lv = {L * 3 * E, c.D, 3 * E};
      p.lo = {L * E, c.D, E};
      in.resize(size_t(c.B * L * 3 * E));
      scatter(q.data(), c.B, c.H, L, c.D, p.lq, in.data());
      scatter(k.data(), c.B, c.H, L, c.D, p.lk, in.data() + E);
      scatter(v.data(), c.B, c.H, L, c.D, p.lv, in.data() + 2 * E);
    } else {
      flash::set_contiguous(p);
      in = to_vec(q);
      for (const Tensor& t : {k, v}) in.insert(in.end(), t.data(), t.data() + t.numel());
    }
    const int64_t k_at = c.packed ? E : q.numel(), v_at = c.packed ? 2 * E : q.numel() + k.numel();
    p.q = in.data(), p.k = in.data() + k_at, p.v = in.data() + v_at;
    std::vector<float> dO(size_t(c.B * c.H * c.Lq * c.Dv));
    scatter(dout.data(), c.B, c.H, c.Lq, c.Dv, p.lo, dO.data());

    for (cpu::Isa isa : runnable_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      auto fwd = isa == cpu::Isa::avx512 ? flash::kernels::avx512::forward
                 : isa == cpu::Isa::avx2 ? flash::kernels::avx2::forward
                                         : flash::kernels::scalar::forward;
      auto bwd = isa == cpu::Isa::avx512 ? flash::kernels::avx512::backward
                 : isa == cpu::Isa::avx2 ? flash::kernels::avx2::backward
                                         : flash::kernels::scalar::backward;
      std::vector<float> out(dO.size(), std::nanf("")), lse(size_t(c.B * c.H * c.Lq)), scratch;
      std::vector<float> grads(in.size(), std::nanf(""));  // every element of the three views is written
      fwd(p, out.data(), lse.data(), nan_scratch(scratch));
      bwd(p, p.lk, p.lv, out.data(), dO.data(), lse.data(), grads.data(), grads.data() + k_at, grads.data() + v_at,
          nan_scratch(scratch));
      const std::vector<float> got[] = {gather(out.data(), c.B, c.H, c.Lq, c.Dv, p.lo),
                                        gather(grads.data(), c.B, c.H, c.Lq, c.D, p.lq),
                                        gather(grads.data() + k_at, c.B, c.H, c.Lk, c.D, p.lk),
                                        gather(grads.data() + v_at, c.B, c.H, c.Lk, c.Dv, p.lv)};
      const Tensor* want[] = {&ref.out, &ref.dq, &ref.dk, &ref.dv};
      const char* names[] = {"out", "dq", "dk", "dv"};
      for (int i = 0; i < 4; ++i)  // as test_attention_fused.cpp: 2e-3 relative, floor 1e-2 of the scale
        EXPECT_REL_CLOSE(got[i], to_vec(*want[i]), 2e-3, 1e-2, 1e-2, names[i]);
    }
  }
  set_num_threads(saved_threads);
}

// simd::kLanes of each build
int lanes_of(cpu::Isa isa) { return isa == cpu::Isa::avx512 ? 16 : isa == cpu::Isa::avx2 ? 8 : 1; }

using StepFwd = void (*)(const attention::additive_step_kernels::Forward&);
using StepBwd = void (*)(const attention::additive_step_kernels::Backward&);
using StepProj = bool (*)(int64_t, int64_t, int64_t, const float*, const float*, float*,
                          const attention::KernelScratch&);
struct StepBuild {
  StepProj project_query;
  StepFwd forward;
  StepBwd backward;
};
StepBuild step_build(cpu::Isa isa) {
  namespace k = attention::additive_step_kernels;
  if (isa == cpu::Isa::avx512) return {k::avx512::project_query, k::avx512::forward, k::avx512::backward};
  if (isa == cpu::Isa::avx2) return {k::avx2::project_query, k::avx2::forward, k::avx2::backward};
  return {k::scalar::project_query, k::scalar::forward, k::scalar::backward};
}

// additive_step_kernels::project_query of every build: the register tile for
// kLanes <= B <= 128 (against a double product), false (nothing written) otherwise
TEST(IsaDispatch, AdditiveStepQueryProjectionEveryBuild) {
  Rng rng(12);
  const int64_t Qd = 37, A = 45;  // tails in both transposes' 8 x 8 blocks
  const std::vector<float> W1 = random_vec(A * Qd, rng);
  for (int64_t B : {1, 7, 13, 64, 128, 129}) {
    const std::vector<float> query = random_vec(B * Qd, rng);
    std::vector<float> ref(size_t(B * A));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t a = 0; a < A; ++a) {
        double s = 0;
        for (int64_t i = 0; i < Qd; ++i) s += double(query[size_t(b * Qd + i)]) * W1[size_t(a * Qd + i)];
        ref[size_t(b * A + a)] = float(s);
      }
    for (cpu::Isa isa : runnable_isas()) {
      std::vector<float> qp(size_t(B * A), std::nanf("")), scratch;
      const bool tiled =
          step_build(isa).project_query(B, Qd, A, query.data(), W1.data(), qp.data(), nan_scratch(scratch));
      EXPECT_EQ(tiled, B >= lanes_of(isa) && B <= 128) << cpu::isa_name(isa) << " B=" << B;
      if (tiled) {  // braces: EXPECT_LE is an if / else of its own
        EXPECT_LE(compare(qp, ref, 1e-5, 1e-5).max_abs, 2e-5) << cpu::isa_name(isa) << " B=" << B;
      }
    }
  }
}

// additive_step_kernels forward and backward of every build against
// additive_reference with identity projections (W1 = W2 = I, no bias: query is
// qp and keys are kp, so its dquery and dkeys are the kernel's dqp and dkp);
// lengths 13, 0, 1 and random; with both gradients, the context's only, the weights' only
TEST(IsaDispatch, AdditiveStepEveryBuildMatchesTheReference) {
  const int64_t B = 5, Lk = 13, Dv = 9, A = 20;  // A = 20, Dv = 9: vector lanes and a tail
  Rng rng(13);
  Tensor qp = randn({B, A}, rng), kp = randn({B, Lk, A}, rng), values = randn({B, Lk, Dv}, rng), v = randn({A}, rng),
         eye = Tensor::zeros({A, A});
  for (int64_t a = 0; a < A; ++a) eye.data()[a * A + a] = 1.0f;
  std::vector<int64_t> lengths = {Lk, 0, 1, 1 + int64_t(rng.below(Lk)), 1 + int64_t(rng.below(Lk))};
  std::vector<float> len(lengths.begin(), lengths.end());
  const Tensor dctx = randn({B, Dv}, rng), dw = randn({B, Lk}, rng);
  for (int grads = 0; grads < 3; ++grads) {  // 0: both, 1: context only, 2: weights only
    SCOPED_TRACE(grads == 0 ? "both gradients" : grads == 1 ? "context gradient" : "weights gradient");
    const Tensor dc = grads == 2 ? Tensor::zeros({B, Dv}) : dctx, dwt = grads == 1 ? Tensor::zeros({B, Lk}) : dw;
    const AdditiveReference r =
        attn::testing::additive_reference(qp, kp, values, eye, eye, Tensor(), v, lengths, dc, dwt);
    for (cpu::Isa isa : runnable_isas()) {
      SCOPED_TRACE(cpu::isa_name(isa));
      std::vector<float> w(size_t(B * Lk), std::nanf("")), ctx(size_t(B * Dv), std::nanf(""));
      attention::additive_step_kernels::Forward f;
      f.B = B, f.Lk = Lk, f.A = A, f.Dv = Dv, f.qp = qp.data(), f.kp = kp.data(), f.values = values.data();
      f.v = v.data(), f.lengths = len.data(), f.weights = w.data(), f.context = ctx.data();
      step_build(isa).forward(f);
      EXPECT_REL_CLOSE(ctx, to_vec(r.context), 2e-4, 1e-2, 1e-6, "context");
      EXPECT_REL_CLOSE(w, to_vec(r.weights), 2e-4, 1e-2, 1e-6, "weights");

      std::vector<float> dkp(size_t(B * Lk * A), std::nanf("")), dval(size_t(B * Lk * Dv), std::nanf(""));
      std::vector<float> dqp(size_t(B * A), 0.0f), dv_rows(size_t(B * A), 0.0f), da(size_t(B * Lk));
      attention::additive_step_kernels::Backward g;
      g.B = B, g.Lk = Lk, g.A = A, g.Dv = Dv, g.qp = qp.data(), g.kp = kp.data(), g.values = values.data();
      g.v = v.data(), g.lengths = len.data(), g.weights = w.data();
      g.dcontext = grads == 2 ? nullptr : dctx.data(), g.dweights = grads == 1 ? nullptr : dw.data();
      g.dkp = dkp.data(), g.dvalues = dval.data(), g.dqp = dqp.data(), g.dv_rows = dv_rows.data(), g.da = da.data();
      step_build(isa).backward(g);
      std::vector<float> dv(size_t(A), 0.0f);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t a = 0; a < A; ++a) dv[size_t(a)] += dv_rows[size_t(b * A + a)];
      EXPECT_REL_CLOSE(dqp, to_vec(r.dquery), 2e-4, 1e-2, 1e-6, "dqp");
      EXPECT_REL_CLOSE(dkp, to_vec(r.dkeys), 2e-4, 1e-2, 1e-6, "dkp");
      EXPECT_REL_CLOSE(dval, to_vec(r.dvalues), 2e-4, 1e-2, 1e-6, "dvalues");
      EXPECT_REL_CLOSE(dv, to_vec(r.dv), 2e-4, 1e-2, 1e-6, "dv");
    }
  }
}

// additive_scores_kernels forward and backward of every build against a double
// loop: e_ij = v^T tanh(qa_i + ka_j); de = 0 on some pairs (skipped by the kernel)
TEST(IsaDispatch, AdditiveScoresEveryBuildMatchesTheReference) {
  const int64_t BH = 3, Lq = 5, Lk = 7, A = 20;
  Rng rng(14);
  const std::vector<float> qa = random_vec(BH * Lq * A, rng), ka = random_vec(BH * Lk * A, rng), v = random_vec(A, rng);
  std::vector<float> de = random_vec(BH * Lq * Lk, rng);
  for (size_t i = 0; i < de.size(); i += 4) de[i] = 0.0f;
  std::vector<double> e_d(de.size()), dqa_d(qa.size()), dka_d(ka.size()), dv_d(size_t(BH * A));
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t i = 0; i < Lq; ++i)
      for (int64_t j = 0; j < Lk; ++j) {
        const int64_t r = bh * Lq + i, kr = bh * Lk + j;
        double s = 0;
        for (int64_t a = 0; a < A; ++a) {
          const double t = std::tanh(double(qa[size_t(r * A + a)]) + ka[size_t(kr * A + a)]);
          const double d = de[size_t(r * Lk + j)], dz = d * v[size_t(a)] * (1.0 - t * t);
          s += v[size_t(a)] * t;
          dqa_d[size_t(r * A + a)] += dz;
          dka_d[size_t(kr * A + a)] += dz;
          dv_d[size_t(bh * A + a)] += d * t;
        }
        e_d[size_t(r * Lk + j)] = s;
      }
  auto to_float = [](const std::vector<double>& x) { return std::vector<float>(x.begin(), x.end()); };
  const std::vector<float> e_ref = to_float(e_d), dqa_ref = to_float(dqa_d), dka_ref = to_float(dka_d),
                           dv_ref = to_float(dv_d);
  const attention::additive_scores_kernels::Scores s{BH, Lq, Lk, A, qa.data(), ka.data(), v.data()};
  for (cpu::Isa isa : runnable_isas()) {
    SCOPED_TRACE(cpu::isa_name(isa));
    namespace k = attention::additive_scores_kernels;
    auto fwd = isa == cpu::Isa::avx512 ? k::avx512::forward
               : isa == cpu::Isa::avx2 ? k::avx2::forward
                                       : k::scalar::forward;
    auto bwd = isa == cpu::Isa::avx512 ? k::avx512::backward
               : isa == cpu::Isa::avx2 ? k::avx2::backward
                                       : k::scalar::backward;
    std::vector<float> e(de.size(), std::nanf("")), dqa(qa.size(), 0.0f), dka(ka.size(), 0.0f), dv(dv_ref.size(), 0.0f);
    fwd(s, e.data());
    bwd(s, de.data(), dqa.data(), dka.data(), dv.data());
    EXPECT_REL_CLOSE(e, e_ref, 2e-4, 1e-2, 1e-6, "e");
    EXPECT_REL_CLOSE(dqa, dqa_ref, 2e-4, 1e-2, 1e-6, "dqa");
    EXPECT_REL_CLOSE(dka, dka_ref, 2e-4, 1e-2, 1e-6, "dka");
    EXPECT_REL_CLOSE(dv, dv_ref, 2e-4, 1e-2, 1e-6, "dv");
  }
}

}  // namespace
