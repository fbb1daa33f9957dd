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


using namespace simd;

// Key / value j's first float: at base + offsets[j] when offsets is given, else base + j * stride
inline const float* row_at(const float* base, const int64_t* offsets, int64_t j, int64_t stride) {
  return base + (offsets ? offsets[j] : j * stride);
}

// a[j] = q . keys_j for j in [lo, hi): four keys at a time, each its own
// accumulator (a dot product of one accumulator was a chain of dependent FMAs
// and a reduction per key: the Transformer's search spent 11% of its time here)
void scores(const DotAttend& r) {
  int64_t j = r.lo;
  const int64_t K = r.K, vec = K / kLanes * kLanes;
  for (; j + 4 <= r.hi; j += 4) {
    const float* k[4];
    vf acc[4];
    for (int u = 0; u < 4; ++u) k[u] = row_at(r.keys, r.offsets, j + u, K), acc[u] = zero();
    for (int64_t d = 0; d < vec; d += kLanes) {
      const vf q = load(r.q + d);
      for (int u = 0; u < 4; ++u) acc[u] = fmadd(q, load(k[u] + d), acc[u]);
    }
    for (int u = 0; u < 4; ++u) {
      float s = reduce_add(acc[u]);
      for (int64_t d = vec; d < K; ++d) s += r.q[d] * k[u][d];
      r.a[j + u] = s;
    }
  }
  for (; j < r.hi; ++j) r.a[j] = dot(r.q, row_at(r.keys, r.offsets, j, K), K);
}

// c [Dv] = sum_j w[j] values_j over [lo, hi), in registers: blocks of up to
// 8 vectors of the context, even and odd keys in two accumulators (two chains
// of dependent FMAs instead of one)
void context(const DotAttend& r) {
  constexpr int64_t kBlock = 8 * kLanes;
  const int64_t Dv = r.Dv, vec = Dv / kLanes * kLanes;
  for (int64_t d0 = 0; d0 < vec; d0 += kBlock) {
    const int nv = int((vec - d0 < kBlock ? vec - d0 : kBlock) / kLanes);
    vf even[8], odd[8];
    for (int v = 0; v < 8; ++v) even[v] = odd[v] = zero();
    int64_t j = r.lo;
    for (; j + 2 <= r.hi; j += 2) {
      const float *x = row_at(r.values, r.offsets, j, Dv) + d0, *y = row_at(r.values, r.offsets, j + 1, Dv) + d0;
      const vf wx = set1(r.w[j]), wy = set1(r.w[j + 1]);
      for (int v = 0; v < nv; ++v) {
        even[v] = fmadd(wx, load(x + v * kLanes), even[v]);
        odd[v] = fmadd(wy, load(y + v * kLanes), odd[v]);
      }
    }
    if (j < r.hi) {
      const float* x = row_at(r.values, r.offsets, j, Dv) + d0;
      const vf wx = set1(r.w[j]);
      for (int v = 0; v < nv; ++v) even[v] = fmadd(wx, load(x + v * kLanes), even[v]);
    }
    for (int v = 0; v < nv; ++v) store(r.c + d0 + v * kLanes, add(even[v], odd[v]));
  }
  for (int64_t j = r.lo; j < r.hi; ++j)  // the last Dv mod kLanes floats
    for (int64_t d = vec; d < Dv; ++d) r.c[d] += r.w[j] * row_at(r.values, r.offsets, j, Dv)[d];
}

}  // namespace

void dot_attend(const DotAttend& r) {
  const int64_t lo = r.lo, hi = r.hi;
  for (int64_t j = 0; j < r.S; ++j) r.w[j] = r.a[j] = 0.0f;
  for (int64_t d = 0; d < r.Dv; ++d) r.c[d] = 0.0f;
  if (lo >= hi) return;  // nothing visible: zero weights and context
  scores(r);
  // the softmax over [lo, hi), max-subtracted, exp 16 lanes at a time
  float* a = r.a + lo;
  const int64_t n = hi - lo;
  const float mx = max_of(a, n);
  const vf vmx = set1(mx);
  vf vsum = zero();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    const vf e = simd::exp(sub(load(a + j), vmx));
    store(a + j, e);
    vsum = add(vsum, e);
  }
  float sum = reduce_add(vsum);
  for (; j < n; ++j) sum += (a[j] = simd::exp(a[j] - mx));
  const float inv = 1.0f / sum;
  for (int64_t i = lo; i < hi; ++i) {
    r.a[i] *= inv;
    r.w[i] = r.gauss ? r.a[i] * gauss_at(i, r.p, r.inv_two_sigma2) : r.a[i];
  }
  context(r);
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
