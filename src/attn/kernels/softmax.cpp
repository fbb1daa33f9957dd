// Row loops of the softmax kernels (see kernels/softmax.h). An ISA source
// (kernels/dispatch.h): compiled once per instruction set.
#include "attn/kernels/softmax.h"

#include "attn/cpu/threading.h"
#include "attn/simd/vec.h"  // ATTN_SIMD_ISA

namespace attn::kernels::softmax_rows::ATTN_SIMD_ISA {

void forward(const float* px, const float* pm, int64_t rows, int64_t n, bool log, float* po) {
  const float ninf = -__builtin_inff();
#pragma omp parallel for if (rows * n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * n;
    const float* mr = pm ? pm + r * n : nullptr;
    float* o = po + r * n;
    float mx = ninf;
    for (int64_t i = 0; i < n; ++i)
      if (!mr || mr[i] != 0.0f) mx = mx < xr[i] ? xr[i] : mx;  // std::max(mx, xr[i])
    if (mx == ninf) {  // every position masked (or -inf): zeros, never NaN
      for (int64_t i = 0; i < n; ++i) o[i] = 0.0f;
      continue;
    }
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      float e = (!mr || mr[i] != 0.0f) ? __builtin_expf(xr[i] - mx) : 0.0f;
      o[i] = e;
      sum += e;
    }
    if (log) {
      float lse = mx + __builtin_logf(sum);
      for (int64_t i = 0; i < n; ++i) o[i] = (!mr || mr[i] != 0.0f) ? xr[i] - lse : 0.0f;
    } else {
      float inv = 1.0f / sum;
      for (int64_t i = 0; i < n; ++i) o[i] *= inv;
    }
  }
}

void backward(const float* py, const float* pd, const float* pm, int64_t rows, int64_t n, bool log, float* o) {
#pragma omp parallel for if (rows * n > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const float *yr = py + r * n, *dr = pd + r * n;
    const float* mr = pm ? pm + r * n : nullptr;
    float* orow = o + r * n;
    bool any = !mr;
    for (int64_t i = 0; mr && i < n; ++i) any = any || mr[i] != 0.0f;
    if (!any) {  // fully masked row: the forward was constant zero
      for (int64_t i = 0; i < n; ++i) orow[i] = 0.0f;
      continue;
    }
    // Row sums and the subtraction in double: dy - sum cancels when the row's
    // gradient is nearly uniform, and float would keep only its rounding there.
    double acc = 0;
    if (log) {
      // y = x - lse  =>  dx = dy - softmax * sum(dy)
      for (int64_t i = 0; i < n; ++i)
        if (!mr || mr[i] != 0.0f) acc += dr[i];
      for (int64_t i = 0; i < n; ++i)
        orow[i] = (!mr || mr[i] != 0.0f) ? float(double(dr[i]) - __builtin_exp(double(yr[i])) * acc) : 0.0f;
    } else {
      // y = softmax(x)  =>  dx = y * (dy - sum(dy * y))
      for (int64_t i = 0; i < n; ++i) acc += double(dr[i]) * double(yr[i]);
      for (int64_t i = 0; i < n; ++i)
        orow[i] = (!mr || mr[i] != 0.0f) ? float(double(yr[i]) * (double(dr[i]) - acc)) : 0.0f;
    }
  }
}

}  // namespace attn::kernels::softmax_rows::ATTN_SIMD_ISA
