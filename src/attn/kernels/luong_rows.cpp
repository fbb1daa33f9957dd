// Luong's dot-score attention rows (see kernels/luong_rows.h). An ISA source
// (kernels/dispatch.h): compiled once per instruction set; no std:: function.
#include "attn/kernels/luong_rows.h"

#include "attn/kernels/additive_math.h"
#include "attn/simd/math.h"

// GCC 12 reports the _mm256_undefined_pd() operand inside _mm512_reduce_add_ps
// as uninitialised where it inlines here (the false positive simd/vec.h describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::models::luong_kernels::ATTN_SIMD_ISA {
namespace {

float dot(const float* x, const float* y, int64_t n) {
  using namespace simd;
  vf acc = zero();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) acc = fmadd(load(x + i), load(y + i), acc);
  float s = reduce_add(acc);
  for (; i < n; ++i) s += x[i] * y[i];
  return s;
}

// y [n] += alpha x [n]
void axpy(float alpha, const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) y[i] += alpha * x[i];
}

float gauss_at(int64_t j, float p, float inv_two_sigma2) {
  const float d = float(j) - p;
  return __builtin_expf(-(d * d) * inv_two_sigma2);
}

}  // namespace

void dot_attend(const DotAttend& r) {
  const int64_t lo = r.lo, hi = r.hi;
  for (int64_t j = 0; j < r.S; ++j) r.w[j] = r.a[j] = 0.0f;
  for (int64_t d = 0; d < r.Dv; ++d) r.c[d] = 0.0f;
  if (lo >= hi) return;  // nothing visible: zero weights and context
  float mx = -__builtin_inff();
  for (int64_t j = lo; j < hi; ++j) {
    const float s = r.a[j] = dot(r.q, r.keys + j * r.K, r.K);
    mx = mx < s ? s : mx;
  }
  float sum = 0.0f;
  for (int64_t j = lo; j < hi; ++j) sum += (r.a[j] = __builtin_expf(r.a[j] - mx));
  const float inv = 1.0f / sum;
  for (int64_t j = lo; j < hi; ++j) {
    r.a[j] *= inv;
    r.w[j] = r.gauss ? r.a[j] * gauss_at(j, r.p, r.inv_two_sigma2) : r.a[j];
  }
  attention::detail::weighted_rows_add(r.w + lo, hi - lo, r.values + lo * r.Dv, r.Dv, r.Dv, r.c);
}

void dot_attend_backward(DotAttendBackward& r) {
  const int64_t lo = r.lo, hi = r.hi, K = r.K, Dv = r.Dv;
  r.dp = 0.0f;
  if (lo >= hi) return;
  // c = sum_j w_j v_j, w_j = a_j g_j  =>  dw_j = dc . v_j,  dv_j += w_j dc,  da_j = dw_j g_j,
  // dp = sum_j dw_j a_j dg_j/dp with dg_j/dp = g_j (j - p) / sigma^2
  float dot_a = 0.0f, dp = 0.0f;
  for (int64_t j = lo; j < hi; ++j) {
    const float g = r.gauss ? gauss_at(j, r.p, r.inv_two_sigma2) : 1.0f;
    const float dw = dot(r.dc, r.values + j * Dv, Dv);
    axpy(r.a[j] * g, r.dc, r.dvalues + j * Dv, Dv);
    r.da[j] = dw * g;
    dot_a += r.a[j] * r.da[j];
    if (r.gauss) dp += dw * r.a[j] * g * (float(j) - r.p) * 2.0f * r.inv_two_sigma2;
  }
  // a = softmax(s)  =>  ds_j = a_j (da_j - sum_k a_k da_k);  s_j = q . k_j
  for (int64_t j = lo; j < hi; ++j) {
    const float ds = r.a[j] * (r.da[j] - dot_a);
    axpy(ds, r.keys + j * K, r.dq, K);
    axpy(ds, r.q, r.dkeys + j * K, K);
  }
  r.dp = dp;
}

}  // namespace attn::models::luong_kernels::ATTN_SIMD_ISA
