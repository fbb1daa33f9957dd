// RNNsearch's per-row kernels (see kernels/rnnsearch_rows.h). An ISA source
// (kernels/dispatch.h): compiled once per instruction set.
#include "attn/kernels/rnnsearch_rows.h"

#include "attn/kernels/additive_math.h"
#include "attn/kernels/vocab_topk_list.h"
#include "attn/simd/math.h"

// GCC 12 reports the _mm256_undefined_pd() operand inside _mm512_reduce_add_ps
// as uninitialised where it inlines here (the false positive simd/vec.h describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::models::rnnsearch_kernels::ATTN_SIMD_ISA {
namespace {

// x [n] += b [n] (b may be null); then the max of x and sum_j exp(x_j - max):
// the statistics of one row of a logits tile.
struct Stats {
  float max, sum;
};
Stats bias_max_sumexp(float* x, const float* b, int64_t n) {
  using namespace simd;
  int64_t j = 0;
  vf vmx = set1(-__builtin_inff());
  for (; j + kLanes <= n; j += kLanes) {
    vf v = load(x + j);
    if (b) store(x + j, v = add(v, load(b + j)));
    vmx = max(vmx, v);
  }
  float mx = reduce_max(vmx);
  for (int64_t t = j; t < n; ++t) {
    const float y = x[t] += b ? b[t] : 0.0f;
    mx = mx < y ? y : mx;  // std::max(mx, y)
  }
  const vf vm = set1(mx);
  vf vs = zero();
  for (j = 0; j + kLanes <= n; j += kLanes) vs = add(vs, simd::exp(sub(load(x + j), vm)));
  float sum = reduce_add(vs);
  for (; j < n; ++j) sum += __builtin_expf(x[j] - mx);
  return {mx, sum};
}

}  // namespace

void attend_row(const float* qp, const float* kp, const float* v, int64_t A, const float* h, int64_t Dv, int64_t L,
                int64_t S, float* w, float* c, const float* next_kp, int64_t next_kp_floats) {
  attention::detail::attend_row(qp, kp, v, A, h, Dv, L, S, w, c, next_kp, next_kp_floats);
}

void attention_weights_row(const float* qp, const float* kp, const float* v, int64_t A, int64_t L, int64_t S,
                           float* w, const float* pf, int64_t pf_floats) {
  attention::detail::attention_weights_row(qp, kp, v, A, L, S, w, pf, pf_floats);
}

void weighted_rows_add(const float* w, int64_t L, const float* rows, int64_t ld, int64_t cols, float* out,
                       const float* next, int64_t next_floats) {
  attention::detail::weighted_rows_add(w, L, rows, ld, cols, out, next, next_floats);
}

void attend_row_backward(const AttendBackward& a) {
  const int64_t A = a.A, Dv = a.Dv, L = a.L;
  // c = sum_j a_j h_j  =>  da_j = dc . h_j,  dh_j += a_j dc
  float dot = 0.0f;
  for (int64_t j = 0; j < L; ++j) {
    const float* h = a.values + j * Dv;
    float* dhj = a.dvalues + j * Dv;
    const float wj = a.w[j];
    float s = 0.0f;
#pragma omp simd reduction(+ : s)
    for (int64_t e = 0; e < Dv; ++e) {
      s += a.dc[e] * h[e];
      dhj[e] += wj * a.dc[e];
    }
    a.da[j] = s;
    dot += wj * s;
  }
  // a = softmax(e)  =>  de_j = a_j (da_j - sum_k a_k da_k);  e_j = v^T tanh(qp + kp_j)
  for (int64_t j = 0; j < L; ++j)
    attention::detail::score_row_backward(a.q, a.keys + j * A, a.v, a.w[j] * (a.da[j] - dot), A, a.dkeys + j * A,
                                          true, a.dq, a.dv);
}

void tanh_columns(float* t, int64_t ldt, int64_t n, int64_t c0, int64_t c1) {
  for (int64_t i = 0; i < n; ++i) {
    float* row = t + i * ldt;
#pragma omp simd
    for (int64_t c = c0; c < c1; ++c) row[c] = simd::tanh(row[c]);
  }
}

void logits_tile(const LogitsTile& t) {
  for (int64_t r = 0; r < t.m; ++r) {
    float* x = t.x + r * t.ld;
    const Stats st = bias_max_sumexp(x, t.bias, t.cols);
    t.tile_max[r * t.stats_ld] = st.max;
    t.tile_sum[r * t.stats_ld] = st.sum;
    TopKList list{t.tokens + r * t.k, t.values + r * t.k, t.k, t.n[r]};
    // else no logit of the tile enters
    if (topk::enters(list, st.max)) models::ATTN_SIMD_ISA::top_k_add(list, x, t.cols, t.first_token, 0.0f);
    t.n[r] = list.n;
  }
}

float lse_of_tiles(const float* tmax, const float* tsum, int64_t n) {
  using namespace simd;
  const float mx = max_of(tmax, n);
  const vf vm = set1(mx);
  vf vs = zero();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) vs = fmadd(load(tsum + j), simd::exp(sub(load(tmax + j), vm)), vs);
  float sum = reduce_add(vs);
  for (; j < n; ++j) sum += tsum[j] * __builtin_expf(tmax[j] - mx);
  return mx + __builtin_logf(sum);
}

}  // namespace attn::models::rnnsearch_kernels::ATTN_SIMD_ISA
