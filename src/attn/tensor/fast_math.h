// Vectorisable fp32 activations: the recurrent gate kernels (nn/rnn_kernels.cpp),
// the search step (models/rnnsearch_search.cpp) and the engine's tanh / sigmoid ops.
//
// std::exp / std::tanh are calls into libm that GCC does not vectorise without
// -ffast-math; the gate loops evaluate three or four of them per element, so
// they would dominate a step. These are branch-free straight-line code that
// vectorises inside `#pragma omp simd` loops, with the accuracy of the Cephes
// single-precision library they are taken from (S. L. Moshier, Cephes Math
// Library, expf.c and tanhf.c):
//   fast_exp      relative error <= ~2 ulp on [-87, 88] (clamped outside)
//   fast_sigmoid  1 / (1 + exp(-x)): no cancellation, ~3 ulp
//   fast_tanh     odd polynomial for |x| < 0.625, 1 - 2/(exp(2|x|)+1) above,
//                 ~3 ulp relative everywhere (no cancellation near 0)
// tests/test_rnn_kernels.cpp sweeps them against the double-precision libm.
//
// ExactMath is the same interface on std:: functions: the reference gate
// kernels are instantiated with it and held equal to the fast ones.
#pragma once
#include <bit>
#include <cmath>
#include <cstdint>

namespace attn::fast_math {

// e^x. Range reduction x = k ln2 + r (|r| <= ln2/2, ln2 split in two parts for
// exactness), degree-6 polynomial for e^r, then 2^k built in the exponent bits.
// k is rounded with the 1.5*2^23 trick (no floor call, so it vectorises on any ISA).
inline float fast_exp(float x) {
  x = x < 88.0f ? x : 88.0f;
  x = x > -87.0f ? x : -87.0f;
  constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  float kf = x * 1.44269504088896341f + kMagic;
  int32_t k = std::bit_cast<int32_t>(kf) - std::bit_cast<int32_t>(kMagic);
  kf -= kMagic;
  float r = x - kf * 0.693359375f;  // ln2 = C1 + C2, C1 exact in few bits
  r = r - kf * -2.12194440e-4f;
  float r2 = r * r;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r2 + r + 1.0f;
  return p * std::bit_cast<float>((k + 127) << 23);
}

// 1 / (1 + e^-x)
inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

// tanh(x): Cephes tanhf. Both branches are computed and one selected, which
// the vectoriser turns into a blend.
inline float fast_tanh(float x) {
  float a = std::fabs(x);
  // |x| >= 0.625: 1 - 2 / (e^{2|x|} + 1), sign restored below
  float big = 1.0f - 2.0f / (fast_exp(2.0f * a) + 1.0f);
  // |x| < 0.625: x + x^3 P(x^2)
  float z = x * x;
  float p = -5.70498872745e-3f;
  p = p * z + 2.06390887954e-2f;
  p = p * z - 5.37397155531e-2f;
  p = p * z + 1.33314422036e-1f;
  p = p * z - 3.33332819422e-1f;
  float small = p * z * x + x;
  return a < 0.625f ? small : std::copysign(big, x);
}

struct FastMath {
  static float sigmoid(float x) { return fast_sigmoid(x); }
  static float tanh(float x) { return fast_tanh(x); }
};

struct ExactMath {
  static float sigmoid(float x) { return float(1.0 / (1.0 + std::exp(-double(x)))); }
  static float tanh(float x) { return float(std::tanh(double(x))); }
};

}  // namespace attn::fast_math
