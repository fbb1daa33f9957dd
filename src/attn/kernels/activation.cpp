// Activation loops (see kernels/activation.h). An ISA source: compiled once per
// instruction set; the scalar simd:: forms below vectorise under `omp simd`.
#include "attn/kernels/activation.h"

#include "attn/cpu/threading.h"
#include "attn/simd/math.h"

namespace attn::kernels::activation::ATTN_SIMD_ISA {
namespace {

constexpr float kInvSqrt2 = 0.70710678118654752f;
constexpr float kInvSqrt2Pi = 0.39894228040143268f;

// Phi(h) and e = exp(-h^2 / 2). A&S 7.1.26: erfc(z) ~ t P(t) exp(-z^2), t = 1 / (1 + p z),
// z = |h| / sqrt 2 >= 0, and Phi(h) = erfc(-h / sqrt 2) / 2.
inline float normal_cdf(float h, float& e) {
  const float z = simd::abs(h) * kInvSqrt2;
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  e = simd::exp(-z * z);
  const float tail = 0.5f * poly * e;  // Phi(-|h|)
  return h >= 0.0f ? 1.0f - tail : tail;
}

inline float gelu_value(float h) {
  float e;
  return h * normal_cdf(h, e);
}

inline float gelu_slope(float h) {
  float e;
  const float cdf = normal_cdf(h, e);
  return cdf + h * kInvSqrt2Pi * e;  // Phi(h) + h phi(h)
}

}  // namespace

namespace {

void bias_act_row(Kind act, float* hr, float* yr, const float* bias, int64_t n) {
  if (bias) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) hr[j] += bias[j];
  }
  if (act == Kind::ReLU) {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) yr[j] = hr[j] > 0.0f ? hr[j] : 0.0f;
  } else {
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) yr[j] = gelu_value(hr[j]);
  }
}

}  // namespace

void bias_act(Kind act, float* h, float* y, const float* bias, int64_t rows, int64_t n) {
  // A small call makes no parallel region at all: inside another one (a search
  // step's), even an `if (false)` region allocates a team of one per call
  // (malloc_consolidate and futex calls: a fifth of a batch-64 step, perf 2026-11-28)
  if (rows * n <= kParallelGrain) {
    for (int64_t r = 0; r < rows; ++r) bias_act_row(act, h + r * n, y + r * n, bias, n);
    return;
  }
#pragma omp parallel for
  for (int64_t r = 0; r < rows; ++r) bias_act_row(act, h + r * n, y + r * n, bias, n);
}

void act_backward(Kind act, const float* saved, const float* dy, float* dh, int64_t count) {
  if (act == Kind::ReLU) {
#pragma omp parallel for simd if (count > kParallelGrain)
    for (int64_t i = 0; i < count; ++i) dh[i] = saved[i] > 0.0f ? dy[i] : 0.0f;
  } else {
#pragma omp parallel for simd if (count > kParallelGrain)
    for (int64_t i = 0; i < count; ++i) dh[i] = dy[i] * gelu_slope(saved[i]);
  }
}

void gelu(const float* x, float* y, int64_t count) {
  if (count <= kParallelGrain) {  // no parallel region (see bias_act)
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) y[i] = gelu_value(x[i]);
    return;
  }
#pragma omp parallel for simd
  for (int64_t i = 0; i < count; ++i) y[i] = gelu_value(x[i]);
}

}  // namespace attn::kernels::activation::ATTN_SIMD_ISA
