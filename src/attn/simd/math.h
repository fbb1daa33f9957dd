// Vectorisable fp32 transcendental functions on the vector layer (internal
// header): each written once, as a template over one lane (float) and a vector
// (vf), with the same result per lane in both forms.
//
// std::exp / std::tanh are calls into libm that GCC does not vectorise without
// -ffast-math; a recurrent gate loop evaluates three or four of them per element
// and an attention row one per score, so they would dominate. These are
// branch-free straight-line code: the float form vectorises inside
// `#pragma omp simd` loops (on AVX2 and the baseline only because the ISA
// kernels compile with -fno-trapping-math, CMakeLists.txt: tanh's select between
// two computed values is not if-converted otherwise), the vf form is called from
// hand-vectorised kernels.
//
//   exp(x)            Cephes expf (S. L. Moshier, Cephes Math Library): n = x / ln2
//                     rounded to nearest, r = x - n ln2 (|r| <= ln2/2), e^r = 1 + r +
//                     r^2 P(r) with P of degree 5, 2^n in the exponent bits. <= 1.25 ulp
//                     relative on [-87.3, 88]; exactly 0 below -87.33654 (where the
//                     result would be subnormal) and for -inf, so a masked score
//                     contributes exactly nothing; e^88 above 88; NaN gives ~1e-38.
//   exp_clamped(x)    the same without the flush to 0 (x clamped to [-87.33654, 88]),
//                     for sigmoid and tanh, whose results it does not change.
//   sigmoid(x)        1 / (1 + exp(-x)): no cancellation, <= ~3 ulp.
//   tanh(x)           Cephes tanhf: x + x^3 P(x^2) for |x| < 0.625, 1 - 2/(exp(2|x|)+1)
//                     above (both computed, one selected): <= ~1.4 ulp relative
//                     everywhere (no cancellation near 0); +-1 beyond |x| ~ 9.
//   tanh_rational(x)  x P(x^2) / Q(x^2) on |x| <= 7.9 (+-1 beyond), the rational
//                     approximation of Eigen's generic_fast_tanh_float: ~6 ulp, and
//                     about half the arithmetic of tanh (no exp, one reciprocal, which
//                     on vectors is the ~23-bit estimate of reciprocal()). The additive
//                     attention score v^T tanh(q + k) (kernels/additive_math.h) is
//                     bound by it; everything else uses tanh.
//
// Users: the float forms: kernels/rnn_gates.cpp (the gate activations, through
// FastMath), kernels/elementwise.cpp (the engine's tanh / sigmoid ops),
// kernels/rnnsearch_rows.cpp (the readout's tanh); the vf forms: exp in the
// softmaxes and log-sum-exps of kernels/flash.cpp, kernels/output_loss.cpp,
// kernels/vocab_topk.cpp and kernels/rnnsearch_rows.cpp, tanh_rational in
// kernels/additive_math.h. tests/test_rnn_kernels.cpp sweeps the float
// forms against the double-precision libm. The vf forms give the float forms'
// bits lane by lane (the same operations; checked over every float for AVX-512
// and AVX2 + FMA); without FMA hardware the float form rounds a * b + c twice.
//
// ExactMath is FastMath's interface on std:: functions in double: the reference
// gate kernels are instantiated with it and held equal to the fast ones.
#pragma once
#include <cmath>
#include <concepts>

#include "attn/simd/vec.h"

namespace attn::simd {
inline namespace ATTN_SIMD_ISA {

// the constant c in every lane of V
template <Lanes V>
inline V splat(float c) {
  if constexpr (std::same_as<V, float>)
    return c;
  else
    return set1(c);
}

// e^x for x clamped to [-87.33654, 88] (so e^-87.33654 = FLT_MIN below it): the
// one evaluation of the polynomial. sigmoid and tanh call it directly, as their
// results are the same with or without exp's flush to zero below.
template <Lanes V>
inline V exp_clamped(V x) {
  x = min(max(x, splat<V>(-87.33654f)), splat<V>(88.0f));
  const V n = round_nearest(mul(x, splat<V>(1.44269504088896341f)));  // x / ln2
  // r = x - n ln2, ln2 split in two parts (the first exact in few bits)
  V r = fmadd(n, splat<V>(-0.693359375f), x);
  r = fmadd(n, splat<V>(2.12194440e-4f), r);
  V p = splat<V>(1.9875691500e-4f);
  p = fmadd(p, r, splat<V>(1.3981999507e-3f));
  p = fmadd(p, r, splat<V>(8.3334519073e-3f));
  p = fmadd(p, r, splat<V>(4.1665795894e-2f));
  p = fmadd(p, r, splat<V>(1.6666665459e-1f));
  p = fmadd(p, r, splat<V>(5.0000001201e-1f));
  p = fmadd(p, mul(r, r), add(r, splat<V>(1.0f)));  // e^r = 1 + r + r^2 P(r)
  return scale_pow2(p, n);
}

// e^x (see the file comment): exactly 0 below -87.33654, where the result would
// be subnormal, and for -inf
template <Lanes V>
inline V exp(V x) {
  return select(lt(x, splat<V>(-87.33654f)), splat<V>(0.0f), exp_clamped(x));
}

// 1 / (1 + e^-x)
template <Lanes V>
inline V sigmoid(V x) {
  const V one = splat<V>(1.0f);
  return div(one, add(one, exp_clamped(neg(x))));
}

// tanh(x), Cephes tanhf (see the file comment)
template <Lanes V>
inline V tanh(V x) {
  const V one = splat<V>(1.0f);
  const V a = abs(x);
  // |x| >= 0.625: 1 - 2 / (e^{2|x|} + 1), sign restored below
  const V big = sub(one, div(splat<V>(2.0f), add(exp_clamped(add(a, a)), one)));
  // |x| < 0.625: x + x^3 P(x^2)
  const V z = mul(x, x);
  V p = splat<V>(-5.70498872745e-3f);
  p = fmadd(p, z, splat<V>(2.06390887954e-2f));
  p = fmadd(p, z, splat<V>(-5.37397155531e-2f));
  p = fmadd(p, z, splat<V>(1.33314422036e-1f));
  p = fmadd(p, z, splat<V>(-3.33332819422e-1f));
  const V small = fmadd(mul(p, z), x, x);
  return select(lt(a, splat<V>(0.625f)), small, copysign(big, x));
}

// tanh(x) = x P(x^2) / Q(x^2) on |x| <= 7.9, clamped beyond (where tanh = +-1 in
// float); Eigen's generic_fast_tanh_float (see the file comment)
template <Lanes V>
inline V tanh_rational(V x) {
  const V c = splat<V>(7.90531110763549805f);
  x = min(max(x, neg(c)), c);
  const V x2 = mul(x, x);
  V p = splat<V>(-2.76076847742355e-16f);
  p = fmadd(p, x2, splat<V>(2.00018790482477e-13f));
  p = fmadd(p, x2, splat<V>(-8.60467152213735e-11f));
  p = fmadd(p, x2, splat<V>(5.12229709037114e-08f));
  p = fmadd(p, x2, splat<V>(1.48572235717979e-05f));
  p = fmadd(p, x2, splat<V>(6.37261928875436e-04f));
  p = fmadd(p, x2, splat<V>(4.89352455891786e-03f));
  p = mul(p, x);
  V q = splat<V>(1.19825839466702e-06f);
  q = fmadd(q, x2, splat<V>(1.18534705686654e-04f));
  q = fmadd(q, x2, splat<V>(2.26843463243900e-03f));
  q = fmadd(q, x2, splat<V>(4.89352518554385e-03f));
  return mul(p, reciprocal(q));  // q >= 4.9e-3 on the clamped range: no special cases
}

// The activations of the recurrent gate kernels (kernels/rnn_gates.cpp), as a policy.
struct FastMath {
  static float sigmoid(float x) { return simd::sigmoid(x); }
  static float tanh(float x) { return simd::tanh(x); }
};

struct ExactMath {
  static float sigmoid(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }
  static float tanh(float x) { return float(std::tanh(double(x))); }
};

}  // namespace ATTN_SIMD_ISA
}  // namespace attn::simd
