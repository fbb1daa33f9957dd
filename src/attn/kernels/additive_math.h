// Row kernels of the additive score e = v^T tanh(qp + kp), shared by the fused
// decoder step (kernels/additive_step.cpp), the fused score op
// (kernels/additive_scores.cpp) and the rnnsearch decoder's training loop and
// search step (models/) (internal header).
//
// No std:: function here (std::max, std::fill, std::tanh, ...: inline functions
// outside the ISA namespace, which an ISA source must not instantiate,
// kernels/dispatch.h): the builtins and plain loops below are what they expand to.
#pragma once
#include <cstdint>

#include "attn/simd/math.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

// ISA-internal (kernels/dispatch.h): included only by ISA sources, so its inline
// functions live in the namespace of the instruction set being compiled.
namespace attn::attention::detail {
inline namespace ATTN_SIMD_ISA {

// Fetches the 64-byte lines [line, end) of p into L2 (no-op without SSE).
inline void prefetch_l2(const char* p, int64_t line, int64_t end) {
#if defined(__SSE__)
  for (; line < end; ++line) _mm_prefetch(p + line * 64, _MM_HINT_T1);
#else
  (void)p, (void)line, (void)end;
#endif
}

// sum_a v[a] tanh(qp[a] + kp[a]) over a < A, vectorised. The loop is bound by
// the tanh's arithmetic, so it also fetches pf_bytes from pf into L2 on the
// way (the values the caller reads next), spread over its iterations.
inline float score_row(const float* qp, const float* kp, const float* v, int64_t A, const void* pf = nullptr,
                       int64_t pf_bytes = 0) {
  using namespace simd;
  vf acc = zero();
  int64_t a = 0;
  const char* pfc = static_cast<const char*>(pf);
  const int64_t lines = pf ? (pf_bytes + 63) / 64 : 0, iters = A / kLanes > 1 ? A / kLanes : 1,
                per_iter = (lines + iters - 1) / iters;
  int64_t line = 0;
  for (; a + kLanes <= A; a += kLanes, line += per_iter) {
    prefetch_l2(pfc, line, line + per_iter < lines ? line + per_iter : lines);
    acc = fmadd(load(v + a), simd::tanh_rational(add(load(qp + a), load(kp + a))), acc);
  }
  if (line < lines) prefetch_l2(pfc, line, lines);
  float s = reduce_add(acc);
  for (; a < A; ++a) s += v[a] * __builtin_tanhf(qp[a] + kp[a]);
  return s;
}

// e = v^T tanh(z), z = qp + kp:  dz = de v (1 - tanh^2 z);  dkp = dz (or += dz when
// accumulate_dkp), dqp += dz, dv += de tanh z
inline void score_row_backward(const float* qp, const float* kp, const float* v, float de, int64_t A, float* dkp,
                               bool accumulate_dkp, float* dqp, float* dv) {
  using namespace simd;
  const vf vde = set1(de), one = set1(1.0f);
  int64_t a = 0;
  for (; a + kLanes <= A; a += kLanes) {
    vf t = simd::tanh_rational(add(load(qp + a), load(kp + a)));
    vf dz = mul(mul(vde, load(v + a)), sub(one, mul(t, t)));
    store(dkp + a, accumulate_dkp ? add(load(dkp + a), dz) : dz);
    store(dqp + a, add(load(dqp + a), dz));
    store(dv + a, fmadd(vde, t, load(dv + a)));
  }
  for (; a < A; ++a) {
    float t = __builtin_tanhf(qp[a] + kp[a]);
    float dz = de * v[a] * (1.0f - t * t);
    dkp[a] = accumulate_dkp ? dkp[a] + dz : dz;
    dqp[a] += dz;
    dv[a] += de * t;
  }
}
// The attention weights of one query over the first L of S keys:
//   w_j = softmax_j(v^T tanh(qp + kp_j)) for j < L, 0 for L <= j < S (all 0 when L == 0)
// qp [A], kp [S, A] row-major; writes w [S]. Scoring key j (arithmetic-bound)
// fetches row j of pf (pf_floats floats per row, the rows the caller reads
// next with these weights) into L2; pf may be null.
inline void attention_weights_row(const float* qp, const float* kp, const float* v, int64_t A, int64_t L, int64_t S,
                                  float* w, const float* pf = nullptr, int64_t pf_floats = 0) {
  float mx = -__builtin_inff();
  for (int64_t j = 0; j < L; ++j) {
    const float e = w[j] = score_row(qp, kp + j * A, v, A, pf ? pf + j * pf_floats : nullptr,
                                     pf_floats * int64_t(sizeof(float)));
    mx = mx < e ? e : mx;  // std::max(mx, e)
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < L; ++j) sum += (w[j] = __builtin_expf(w[j] - mx));
  const float inv = L > 0 ? 1.0f / sum : 0.0f;
  for (int64_t j = 0; j < L; ++j) w[j] *= inv;
  for (int64_t j = L; j < S; ++j) w[j] = 0.0f;
}

// out [cols] += sum_{j < L} w_j rows_j, rows [L, ld] row-major: the context
// sum of attention (rows: values), streaming the rows once, four per pass over
// out. Bound by reading the rows, so it fetches next [next_floats] (or null),
// what the caller's next row needs, into L2 on the way.
inline void weighted_rows_add(const float* w, int64_t L, const float* rows, int64_t ld, int64_t cols, float* out,
                              const float* next = nullptr, int64_t next_floats = 0) {
  const char* nk = reinterpret_cast<const char*>(next);
  const int64_t passes = L / 4 > 1 ? L / 4 : 1, nk_lines = next ? (next_floats * int64_t(sizeof(float)) + 63) / 64 : 0,
                nk_per_pass = (nk_lines + passes - 1) / passes;
  int64_t j = 0, nk_line = 0;
  for (; j + 4 <= L; j += 4, nk_line += nk_per_pass) {
    prefetch_l2(nk, nk_line, nk_line + nk_per_pass < nk_lines ? nk_line + nk_per_pass : nk_lines);
    const float a0 = w[j], a1 = w[j + 1], a2 = w[j + 2], a3 = w[j + 3];
    const float *h0 = rows + j * ld, *h1 = h0 + ld, *h2 = h1 + ld, *h3 = h2 + ld;
#pragma omp simd
    for (int64_t d = 0; d < cols; ++d) out[d] += a0 * h0[d] + a1 * h1[d] + a2 * h2[d] + a3 * h3[d];
  }
  if (nk_line < nk_lines) prefetch_l2(nk, nk_line, nk_lines);
  for (; j < L; ++j) {
    const float a = w[j];
    const float* hj = rows + j * ld;
#pragma omp simd
    for (int64_t d = 0; d < cols; ++d) out[d] += a * hj[d];
  }
}

// One query of an additive attention step over the first L of S keys:
//   w = attention_weights_row(...), c [Dv] = sum_j w_j h_j,  h [S, Dv] row-major.
// Memory and arithmetic overlap: scoring key j (arithmetic-bound) fetches value
// row j into L2, and the context sum (bound by reading the values) fetches
// next_kp [next_kp_floats], the keys of the caller's next query, if any. At
// batch 64, 50 keys of 512 and values of 1024 (20 MB per step) that took the
// row loop from ~1.0 to ~0.8 ms.
inline void attend_row(const float* qp, const float* kp, const float* v, int64_t A, const float* h, int64_t Dv,
                       int64_t L, int64_t S, float* w, float* c, const float* next_kp = nullptr,
                       int64_t next_kp_floats = 0) {
  attention_weights_row(qp, kp, v, A, L, S, w, h, Dv);
  for (int64_t d = 0; d < Dv; ++d) c[d] = 0.0f;
  weighted_rows_add(w, L, h, Dv, Dv, c, next_kp, next_kp_floats);
}

}  // namespace ATTN_SIMD_ISA
}  // namespace attn::attention::detail
