#include <cmath>
#include <limits>
#include <stdexcept>

#include "attn/tensor/kernels.h"
#include "attn/tensor/threading.h"

namespace attn::kernels {

namespace {
Tensor expanded_mask(const Tensor& mask, const Shape& shape) {
  if (!mask.defined()) return Tensor();
  if (broadcast_shapes(mask.shape(), shape) != shape)
    throw std::invalid_argument("softmax: mask " + mask.shape().str() + " does not broadcast to " + shape.str());
  return expand_to(mask, shape);
}
}  // namespace

Tensor softmax_lastdim(const Tensor& x, const Tensor& mask_in, bool log) {
  if (x.dim() == 0) throw std::invalid_argument("softmax: scalar input");
  Tensor mask = expanded_mask(mask_in, x.shape());
  int64_t n = x.shape().back(), rows = n ? x.numel() / n : 0;
  Tensor out = Tensor::empty(x.shape());
  const float* px = x.data();
  const float* pm = mask.defined() ? mask.data() : nullptr;
  float* po = out.data();
  const float ninf = -std::numeric_limits<float>::infinity();
#pragma omp parallel for if (x.numel() > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + r * n;
    const float* mr = pm ? pm + r * n : nullptr;
    float* o = po + r * n;
    float mx = ninf;
    for (int64_t i = 0; i < n; ++i)
      if (!mr || mr[i] != 0.0f) mx = std::max(mx, xr[i]);
    if (mx == ninf) {  // every position masked (or -inf): zeros, never NaN
      for (int64_t i = 0; i < n; ++i) o[i] = 0.0f;
      continue;
    }
    float sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      float e = (!mr || mr[i] != 0.0f) ? std::exp(xr[i] - mx) : 0.0f;
      o[i] = e;
      sum += e;
    }
    if (log) {
      float lse = mx + std::log(sum);
      for (int64_t i = 0; i < n; ++i) o[i] = (!mr || mr[i] != 0.0f) ? xr[i] - lse : 0.0f;
    } else {
      float inv = 1.0f / sum;
      for (int64_t i = 0; i < n; ++i) o[i] *= inv;
    }
  }
  return out;
}

Tensor softmax_lastdim_backward(const Tensor& y, const Tensor& dy, const Tensor& mask_in, bool log) {
  check_same_shape(y, dy, "softmax backward");
  Tensor mask = expanded_mask(mask_in, y.shape());
  int64_t n = y.shape().back(), rows = n ? y.numel() / n : 0;
  Tensor dx = Tensor::empty(y.shape());
  const float *py = y.data(), *pd = dy.data();
  const float* pm = mask.defined() ? mask.data() : nullptr;
  float* o = dx.data();
#pragma omp parallel for if (y.numel() > kParallelGrain)
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
        orow[i] = (!mr || mr[i] != 0.0f) ? float(double(dr[i]) - std::exp(double(yr[i])) * acc) : 0.0f;
    } else {
      // y = softmax(x)  =>  dx = y * (dy - sum(dy * y))
      for (int64_t i = 0; i < n; ++i) acc += double(dr[i]) * double(yr[i]);
      for (int64_t i = 0; i < n; ++i)
        orow[i] = (!mr || mr[i] != 0.0f) ? float(double(yr[i]) * (double(dr[i]) - acc)) : 0.0f;
    }
  }
  return dx;
}

}  // namespace attn::kernels
