// Row kernels of the additive score e = v^T tanh(qp + kp), shared by the fused
// decoder step (additive_step.cpp) and the fused score op (additive_scores.cpp)
// (internal header).
#pragma once
#include <cmath>
#include <cstdint>

#include "attn/attention/simd.h"

namespace attn::attention::detail {

// sum_a v[a] tanh(qp[a] + kp[a]) over a < A, vectorised
inline float score_row(const float* qp, const float* kp, const float* v, int64_t A) {
  using namespace simd;
  vf acc = zero();
  int64_t a = 0;
  for (; a + kLanes <= A; a += kLanes) acc = fmadd(load(v + a), simd::tanh(add(load(qp + a), load(kp + a))), acc);
  float s = reduce_add(acc);
  for (; a < A; ++a) s += v[a] * std::tanh(qp[a] + kp[a]);
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
    vf t = simd::tanh(add(load(qp + a), load(kp + a)));
    vf dz = mul(mul(vde, load(v + a)), sub(one, mul(t, t)));
    store(dkp + a, accumulate_dkp ? add(load(dkp + a), dz) : dz);
    store(dqp + a, add(load(dqp + a), dz));
    store(dv + a, fmadd(vde, t, load(dv + a)));
  }
  for (; a < A; ++a) {
    float t = std::tanh(qp[a] + kp[a]);
    float dz = de * v[a] * (1.0f - t * t);
    dkp[a] = accumulate_dkp ? dkp[a] + dz : dz;
    dqp[a] += dz;
    dv[a] += de * t;
  }
}
}  // namespace attn::attention::detail
