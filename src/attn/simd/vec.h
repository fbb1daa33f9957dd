// attn's CPU vector layer: the float vector type and its operations (internal
// header). The lowest layer of the library: it depends on nothing in attn, and
// every hand-vectorised kernel above is written against it, once, for all
// instruction sets (in the spirit of ggml's GGML_F32_VEC macros).
//
//   vf     a vector of kLanes floats: 16 with AVX-512F, 8 with AVX2 + FMA, else 1
//          (vf is then plain float and every operation below is scalar code)
//   vmask  the result of a lane-wise comparison, consumed by select() and bits()
//
// Every arithmetic operation (add, sub, mul, div, neg, fmadd, min, max, abs,
// copysign, lt, eq, select, reciprocal, round_nearest, scale_pow2) also exists on
// plain float, with the same result as one lane of the vector form (add, sub,
// mul, div and neg are one template for both: GCC and Clang give the vector
// types the arithmetic operators). The float forms are branch-free, so code
// written with them vectorises inside `#pragma omp simd` loops; simd/math.h
// writes each function (exp, sigmoid, tanh) once as a template over float and
// vf on top of them. fmadd is one rounding (a fused multiply-add) on vectors
// and, when the target has FMA, on float; without FMA the float form is a * b + c.
// reciprocal is exact on float, a ~23 (AVX-512) or ~22 (AVX2) bit estimate on vf.
//
// The instruction set is a compile-time choice per translation unit, from the
// compiler's target macros (__AVX512F__, __AVX2__ and __FMA__; -march=native
// here). Everything is declared inside an inline namespace named after that
// choice (kIsa: avx512, avx2 or scalar), so translation units built for
// different instruction sets link into one program without their inline
// functions colliding (One Definition Rule): a kernel compiled once per
// instruction set and chosen at run time needs no change to this header.
//
// Users (all ISA sources, kernels/dispatch.h): attention/ (kernels/flash.cpp,
// kernels/additive_step.cpp, kernels/additive_scores.cpp, kernels/additive_math.h,
// tile_gemm.h), kernels/rows_gemm.cpp, kernels/panel_gemm.cpp (ATTN_SIMD_ISA only),
// models/ (kernels/output_loss.cpp, vocab_topk.cpp, kernels/rnnsearch_rows.cpp),
// kernels/softmax.cpp (ATTN_SIMD_ISA only), and through simd/math.h
// kernels/rnn_gates.cpp and kernels/elementwise.cpp.
#pragma once
#include <algorithm>
#include <bit>
#include <cmath>
#include <concepts>
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

#if defined(__AVX512F__)
#define ATTN_SIMD_ISA avx512
#elif defined(__AVX2__) && defined(__FMA__)
#define ATTN_SIMD_ISA avx2
#else
#define ATTN_SIMD_ISA scalar
#endif

namespace attn::simd {
inline namespace ATTN_SIMD_ISA {

#define ATTN_SIMD_STR2(x) #x
#define ATTN_SIMD_STR(x) ATTN_SIMD_STR2(x)
// the instruction set of this translation unit: "avx512", "avx2" or "scalar"
constexpr const char* kIsa = ATTN_SIMD_STR(ATTN_SIMD_ISA);
#undef ATTN_SIMD_STR
#undef ATTN_SIMD_STR2

#if defined(__AVX512F__)
constexpr int kLanes = 16;
using vf = __m512;
using vmask = __mmask16;
#define ATTN_MM(op) _mm512_##op
#elif defined(__AVX2__) && defined(__FMA__)
constexpr int kLanes = 8;
using vf = __m256;
using vmask = __m256;
#define ATTN_MM(op) _mm256_##op
#else
constexpr int kLanes = 1;
using vf = float;
using vmask = bool;
#endif

// one lane (float) or a vector of kLanes (vf; the same type when kLanes == 1).
// GCC drops __m512's may_alias attribute from the template argument with a
// warning; the comparison of the types does not depend on it.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wignored-attributes"
#endif
template <class V>
concept Lanes = std::same_as<V, float> || std::same_as<V, vf>;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// exactly float: no int or double argument converts into the one-lane forms
// where a kernel says `using namespace simd`
template <class F>
concept Float = std::same_as<F, float>;

// ---- float and vf alike: GCC / Clang vector extensions give __m256 and __m512
// the arithmetic operators (_mm512_add_ps and friends are defined as these)

template <Lanes V> inline V add(V a, V b) { return a + b; }
template <Lanes V> inline V sub(V a, V b) { return a - b; }
template <Lanes V> inline V mul(V a, V b) { return a * b; }
template <Lanes V> inline V div(V a, V b) { return a / b; }
template <Lanes V> inline V neg(V a) { return -a; }

// ---- one lane: plain float ----

template <Float F> inline F fmadd(F a, F b, F c) {
#if defined(__FMA__)
  return __builtin_fmaf(a, b, c);
#else
  return a * b + c;
#endif
}
template <Float F> inline F reciprocal(F x) { return 1.0f / x; }
// as the vector instructions: the second operand when either is NaN
template <Float F> inline F max(F a, F b) { return a > b ? a : b; }
template <Float F> inline F min(F a, F b) { return a < b ? a : b; }
template <Float F> inline F abs(F x) { return __builtin_fabsf(x); }
// |mag| with the sign of sgn
template <Float F> inline F copysign(F mag, F sgn) { return __builtin_copysignf(mag, sgn); }
template <Float F> inline bool lt(F a, F b) { return a < b; }
template <Float F> inline bool eq(F a, F b) { return a == b; }
template <Float F> inline F select(bool m, F if_true, F if_false) { return m ? if_true : if_false; }
// x rounded to the nearest integer, ties to even (|x| < 2^22 without SSE4.1)
template <Float F> inline F round_nearest(F x) {
#if defined(__SSE4_1__)
  return __builtin_nearbyintf(x);  // vectorises as roundps / vrndscaleps
#else
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it leaves no fraction bits
  return (x + kMagic) - kMagic;
#endif
}
// x * 2^n for integral n in [-126, 127]: the power of two built in the exponent bits
template <Float F> inline F scale_pow2(F x, F n) { return x * __builtin_bit_cast(float, (int32_t(n) + 127) << 23); }

// ---- vectors ----

#if defined(ATTN_MM)
// AVX-512 and AVX2 name these intrinsics alike but for the prefix
inline vf load(const float* p) { return ATTN_MM(loadu_ps)(p); }
inline void store(float* p, vf v) { ATTN_MM(storeu_ps)(p, v); }
inline vf set1(float x) { return ATTN_MM(set1_ps)(x); }
inline vf zero() { return ATTN_MM(setzero_ps)(); }
inline vf fmadd(vf a, vf b, vf c) { return ATTN_MM(fmadd_ps)(a, b, c); }
inline vf max(vf a, vf b) { return ATTN_MM(max_ps)(a, b); }
inline vf min(vf a, vf b) { return ATTN_MM(min_ps)(a, b); }
#undef ATTN_MM
#endif

#if defined(__AVX512F__)
// 1/x to ~23 bits: the 14-bit estimate and one Newton step (a divide costs ~8x more)
inline vf reciprocal(vf x) {
  vf r = _mm512_rcp14_ps(x);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(x, r, _mm512_set1_ps(2.0f)));
}
inline vf abs(vf x) {
  return _mm512_castsi512_ps(_mm512_and_epi32(_mm512_castps_si512(x), _mm512_set1_epi32(0x7fffffff)));
}
inline vf copysign(vf mag, vf sgn) {
  const __m512i m = _mm512_and_epi32(_mm512_castps_si512(mag), _mm512_set1_epi32(0x7fffffff));
  const __m512i s = _mm512_and_epi32(_mm512_castps_si512(sgn), _mm512_set1_epi32(int32_t(0x80000000u)));
  return _mm512_castsi512_ps(_mm512_or_epi32(m, s));
}
inline vmask lt(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_LT_OQ); }
inline vmask eq(vf a, vf b) { return _mm512_cmp_ps_mask(a, b, _CMP_EQ_OQ); }
inline vf select(vmask m, vf if_true, vf if_false) { return _mm512_mask_blend_ps(m, if_false, if_true); }
inline unsigned bits(vmask m) { return unsigned(m); }  // lane i set -> bit i
inline float reduce_add(vf v) { return _mm512_reduce_add_ps(v); }
inline float reduce_max(vf v) { return _mm512_reduce_max_ps(v); }
// the sum of v's two 8-float halves
inline __m256 add_halves(vf v) {
  return _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}
// out[0..3] = the lane sums of a, b, c and d (four dot products finished at once)
inline void reduce_add4(vf a, vf b, vf c, vf d, float* out) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(add_halves(a), add_halves(b)),
                                     _mm256_hadd_ps(add_halves(c), add_halves(d)));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
// lane index 0..15 as floats
inline vf iota() { return _mm512_setr_ps(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15); }
// x * 2^n for integral-valued n
inline vf scale_pow2(vf x, vf n) { return _mm512_scalef_ps(x, n); }
inline vf round_nearest(vf x) { return _mm512_roundscale_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#elif defined(__AVX2__) && defined(__FMA__)
// 1/x to ~22 bits: the 12-bit estimate and one Newton step
inline vf reciprocal(vf x) {
  vf r = _mm256_rcp_ps(x);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(x, r, _mm256_set1_ps(2.0f)));
}
inline vf abs(vf x) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), x); }
inline vf copysign(vf mag, vf sgn) {
  const vf sign = _mm256_set1_ps(-0.0f);
  return _mm256_or_ps(_mm256_andnot_ps(sign, mag), _mm256_and_ps(sign, sgn));
}
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
// out[0..3] = the lane sums of a, b, c and d (four dot products finished at once)
inline void reduce_add4(vf a, vf b, vf c, vf d, float* out) {
  const __m256 abcd = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
  _mm_storeu_ps(out, _mm_add_ps(_mm256_castps256_ps128(abcd), _mm256_extractf128_ps(abcd, 1)));
}
inline float reduce_max(vf v) {
  alignas(32) float lanes[kLanes];
  store(lanes, v);
  float m = lanes[0];
  for (int l = 1; l < kLanes; ++l) m = lanes[l] > m ? lanes[l] : m;
  return m;
}
inline vf iota() { return _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7); }
// x * 2^n for integral n in [-126, 127] (exp clamps its input to that range)
inline vf scale_pow2(vf x, vf n) {
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(x, _mm256_castsi256_ps(e));
}
inline vf round_nearest(vf x) { return _mm256_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
#else
// one lane: vf is float, and the one-lane forms above are the vector operations
inline vf load(const float* p) { return *p; }
inline void store(float* p, vf v) { *p = v; }
inline vf set1(float x) { return x; }
inline vf zero() { return 0.0f; }
inline unsigned bits(vmask m) { return m ? 1u : 0u; }
inline float reduce_add(vf v) { return v; }
inline float reduce_max(vf v) { return v; }
inline void reduce_add4(vf a, vf b, vf c, vf d, float* out) { out[0] = a, out[1] = b, out[2] = c, out[3] = d; }
inline vf iota() { return 0.0f; }
#endif

// max of x[0..n), -inf for n == 0
inline float max_of(const float* x, int64_t n) {
  vf vmx = set1(-__builtin_inff());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) vmx = max(vmx, load(x + i));
  float mx = reduce_max(vmx);
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
}

}  // namespace ATTN_SIMD_ISA
}  // namespace attn::simd
