// A thin vector layer for the fused attention kernels (internal header).
//
// One float vector type `vf` of kLanes lanes: AVX-512 (16) when the compiler
// targets it, else AVX2+FMA (8), else a scalar fallback (1), in the spirit of
// ggml's GGML_F32_VEC macros. The kernels are written once against this layer.
// exp and tanh are polynomial approximations (Cephes expf, Eigen's rational
// tanh) accurate to a few ulp; exp returns exactly 0 below -87.3 (and for -inf),
// so masked scores contribute exactly nothing.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#if defined(__AVX512F__) || defined(__AVX2__)
#include <immintrin.h>
#endif

// GCC 12 reports the _mm512_undefined_ps() pass-through operand of the AVX-512
// max/roundscale/scalef intrinsics as "maybe uninitialized" wherever they inline
// (a known false positive); it would bury real warnings in the kernels.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace attn::attention::simd {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
using vf = __m512;
using vmask = __mmask16;
inline vf load(const float* p) { return _mm512_loadu_ps(p); }
inline void store(float* p, vf v) { _mm512_storeu_ps(p, v); }
inline vf set1(float x) { return _mm512_set1_ps(x); }
inline vf zero() { return _mm512_setzero_ps(); }
inline vf fmadd(vf a, vf b, vf c) { return _mm512_fmadd_ps(a, b, c); }
inline vf add(vf a, vf b) { return _mm512_add_ps(a, b); }
inline vf sub(vf a, vf b) { return _mm512_sub_ps(a, b); }
inline vf mul(vf a, vf b) { return _mm512_mul_ps(a, b); }
inline vf div(vf a, vf b) { return _mm512_div_ps(a, b); }
// 1/x to ~23 bits: the 14-bit estimate and one Newton step (a divide costs ~8x more)
inline vf reciprocal(vf x) {
  vf r = _mm512_rcp14_ps(x);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(x, r, _mm512_set1_ps(2.0f)));
}
inline vf max(vf a, vf b) { return _mm512_max_ps(a, b); }
inline vf min(vf a, vf b) { return _mm512_min_ps(a, b); }
inline vmask lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline vmask eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
inline vf select(vmask m, vf if_true, vf if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
inline unsigned bits(vmask m) { return unsigned(m); }  // lane i set -> bit i
inline float reduce_add(vf v) { return _mm512_reduce_add_ps(v); }
// lane index 0..15 as floats
inline vf iota() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
// x * 2^n for integral-valued n
inline vf scale_pow2(vf x, vf n) { return _mm512_scalef_ps(x, n); }
inline vf round_nearest(vf x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kLanes = 8;
using vf = __m256;
using vmask = __m256;
inline vf load(const float* p) { return _mm256_loadu_ps(p); }
inline void store(float* p, vf v) { _mm256_storeu_ps(p, v); }
inline vf set1(float x) { return _mm256_set1_ps(x); }
inline vf zero() { return _mm256_setzero_ps(); }
inline vf fmadd(vf a, vf b, vf c) { return _mm256_fmadd_ps(a, b, c); }
inline vf add(vf a, vf b) { return _mm256_add_ps(a, b); }
inline vf sub(vf a, vf b) { return _mm256_sub_ps(a, b); }
inline vf mul(vf a, vf b) { return _mm256_mul_ps(a, b); }
inline vf div(vf a, vf b) { return _mm256_div_ps(a, b); }
// 1/x to ~22 bits: the 12-bit estimate and one Newton step
inline vf reciprocal(vf x) {
  vf r = _mm256_rcp_ps(x);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(x, r, _mm256_set1_ps(2.0f)));
}
inline vf max(vf a, vf b) { return _mm256_max_ps(a, b); }
inline vf min(vf a, vf b) { return _mm256_min_ps(a, b); }
inline vmask lt(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_LT_OQ); }
inline vmask eq(vf a, vf b) { return _mm256_cmp_ps(a, b, _CMP_EQ_OQ); }
inline vf select(vmask m, vf if_true, vf if_false) { return _mm256_blendv_ps(if_false, if_true, m); }
inline unsigned bits(vmask m) { return unsigned(_mm256_movemask_ps(m)); }  // lane i set -> bit i
inline float reduce_add(vf v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
inline vf iota() { return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7); }
inline vf scale_pow2(vf x, vf n) {  // n in [-126, 127] here (exp clamps its input)
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(x, _mm256_castsi256_ps(e));
}
inline vf round_nearest(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
constexpr int kLanes = 1;
using vf = float;
using vmask = bool;
inline vf load(const float* p) { return *p; }
inline void store(float* p, vf v) { *p = v; }
inline vf set1(float x) { return x; }
inline vf zero() { return 0.0f; }
inline vf fmadd(vf a, vf b, vf c) { return a * b + c; }
inline vf add(vf a, vf b) { return a + b; }
inline vf sub(vf a, vf b) { return a - b; }
inline vf mul(vf a, vf b) { return a * b; }
inline vf div(vf a, vf b) { return a / b; }
inline vf reciprocal(vf x) { return 1.0f / x; }
inline vf max(vf a, vf b) { return a > b ? a : b; }
inline vf min(vf a, vf b) { return a < b ? a : b; }
inline vmask lt(vf a, vf b) { return a < b; }
inline vmask eq(vf a, vf b) { return a == b; }
inline vf select(vmask m, vf if_true, vf if_false) { return m ? if_true : if_false; }
inline unsigned bits(vmask m) { return m ? 1u : 0u; }
inline float reduce_add(vf v) { return v; }
inline vf iota() { return 0.0f; }
inline vf scale_pow2(vf x, vf n) { return std::ldexp(x, int(n)); }
inline vf round_nearest(vf x) { return std::nearbyint(x); }
#endif

// e^x. Cephes expf: x = n ln2 + r, |r| <= ln2/2, e^r by a degree-7 polynomial.
// Inputs below -87.3 (including -inf) give exactly 0; inputs are clamped at 88.
inline vf exp(vf x) {
  const vf lo = set1(-87.33654f);
  vmask underflow = lt(x, lo);
  vf xc = min(max(x, lo), set1(88.0f));
  vf n = round_nearest(mul(xc, set1(1.44269504088896341f)));
  vf r = fmadd(n, set1(-0.693359375f), xc);
  r = fmadd(n, set1(2.12194440e-4f), r);
  vf p = set1(1.9875691500e-4f);
  p = fmadd(p, r, set1(1.3981999507e-3f));
  p = fmadd(p, r, set1(8.3334519073e-3f));
  p = fmadd(p, r, set1(4.1665795894e-2f));
  p = fmadd(p, r, set1(1.6666665459e-1f));
  p = fmadd(p, r, set1(5.0000001201e-1f));
  p = fmadd(p, mul(r, r), add(r, set1(1.0f)));
  return select(underflow, zero(), scale_pow2(p, n));
}

// tanh(x) = x P(x^2) / Q(x^2) on |x| <= 7.9 (clamped beyond, where tanh = +-1 in
// float); the rational approximation of Eigen's generic_fast_tanh_float.
inline vf tanh(vf x) {
  const vf c = set1(7.90531110763549805f);
  x = min(max(x, sub(zero(), c)), c);
  vf x2 = mul(x, x);
  vf p = set1(-2.76076847742355e-16f);
  p = fmadd(p, x2, set1(2.00018790482477e-13f));
  p = fmadd(p, x2, set1(-8.60467152213735e-11f));
  p = fmadd(p, x2, set1(5.12229709037114e-08f));
  p = fmadd(p, x2, set1(1.48572235717979e-05f));
  p = fmadd(p, x2, set1(6.37261928875436e-04f));
  p = fmadd(p, x2, set1(4.89352455891786e-03f));
  p = mul(p, x);
  vf q = set1(1.19825839466702e-06f);
  q = fmadd(q, x2, set1(1.18534705686654e-04f));
  q = fmadd(q, x2, set1(2.26843463243900e-03f));
  q = fmadd(q, x2, set1(4.89352518554385e-03f));
  return mul(p, reciprocal(q));  // q >= 4.9e-3 on the clamped range: no special cases
}

// the largest lane of v
inline float reduce_max(vf v) {
#if defined(__AVX512F__)
  return _mm512_reduce_max_ps(v);
#else
  alignas(64) float lanes[kLanes];
  store(lanes, v);
  float m = lanes[0];
  for (int l = 1; l < kLanes; ++l) m = std::max(m, lanes[l]);
  return m;
#endif
}

// max of x[0..n), -inf for n == 0
inline float max_of(const float* x, int64_t n) {
  vf vmx = set1(-std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vmx = max(vmx, load(x + i));
  float mx = reduce_max(vmx);
  for (; i < n; ++i) mx = std::max(mx, x[i]);
  return mx;
}

}  // namespace attn::attention::simd
