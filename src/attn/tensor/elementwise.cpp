#include <cmath>
#include <stdexcept>

#include "attn/simd/math.h"
#include "attn/tensor/broadcast.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/threading.h"

namespace attn::kernels {

namespace {

template <class F>
void binary_loop(const float* a, int64_t sa, const float* b, int64_t sb, float* o, int64_t n, F f) {
  // sa / sb are 1 (contiguous) or 0 (one value broadcast along the row)
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa == 1) {
    float bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sb == 1) {
    float av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    float v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <class F>
Tensor binary_impl(const Tensor& a, const Tensor& b, F f) {
  if (a.shape() == b.shape()) {
    Tensor out = Tensor::empty(a.shape());
    const float *pa = a.data(), *pb = b.data();
    float* po = out.data();
    int64_t n = out.numel();
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) po[i] = f(pa[i], pb[i]);
    return out;
  }
  Shape os = broadcast_shapes(a.shape(), b.shape());
  Tensor out = Tensor::empty(os);
  if (os.rank() == 0) {
    out.data()[0] = f(a.data()[0], b.data()[0]);
    return out;
  }
  auto sa = detail::broadcast_strides(a.shape(), os), sb = detail::broadcast_strides(b.shape(), os);
  int64_t inner = os.back(), rows = os.numel() / (inner ? inner : 1);
  int last = os.rank() - 1;
  const float *pa = a.data(), *pb = b.data();
  float* po = out.data();
#pragma omp parallel for if (os.numel() > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    binary_loop(pa + detail::row_offset(r, os, sa), sa[last], pb + detail::row_offset(r, os, sb), sb[last],
                po + r * inner, inner, f);
  }
  return out;
}

}  // namespace

Tensor binary(Binary op, const Tensor& a, const Tensor& b) {
  switch (op) {
    case Binary::Add: return binary_impl(a, b, [](float x, float y) { return x + y; });
    case Binary::Sub: return binary_impl(a, b, [](float x, float y) { return x - y; });
    case Binary::Mul: return binary_impl(a, b, [](float x, float y) { return x * y; });
    case Binary::Div: return binary_impl(a, b, [](float x, float y) { return x / y; });
  }
  throw std::logic_error("binary: unknown op");
}

void add_inplace(Tensor& dst, const Tensor& src, float alpha) {
  if (dst.numel() != src.numel())
    throw std::invalid_argument("add_inplace: " + src.shape().str() + " into " + dst.shape().str());
  float* d = dst.data();
  const float* s = src.data();
  int64_t n = dst.numel();
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) d[i] += alpha * s[i];
}

Tensor affine(const Tensor& x, float alpha, float beta) {
  Tensor out = Tensor::empty(x.shape());
  const float* p = x.data();
  float* o = out.data();
  int64_t n = x.numel();
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) o[i] = alpha * p[i] + beta;
  return out;
}

Tensor sum_to(const Tensor& g, const Shape& shape) {
  if (g.shape() == shape) return g;
  if (broadcast_shapes(shape, g.shape()) != g.shape())
    throw std::invalid_argument("sum_to: " + g.shape().str() + " is not a broadcast of " + shape.str());
  Tensor out = Tensor::zeros(shape);
  const Shape& gs = g.shape();
  if (gs.rank() == 0) {
    out.data()[0] = g.data()[0];
    return out;
  }
  auto st = detail::broadcast_strides(shape, gs);
  int64_t inner = gs.back(), rows = gs.numel() / (inner ? inner : 1);
  int64_t s_last = st[gs.rank() - 1];
  const float* pg = g.data();
  float* po = out.data();
  // Serial over rows: different rows may add into the same output row.
  for (int64_t r = 0; r < rows; ++r) {
    float* o = po + detail::row_offset(r, gs, st);
    const float* gr = pg + r * inner;
    if (s_last == 1) {
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) o[i] += gr[i];
    } else {
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < inner; ++i) acc += gr[i];
      o[0] += acc;
    }
  }
  return out;
}

namespace {
template <class F>
Tensor unary_impl(const Tensor& x, F f) {
  Tensor out = Tensor::empty(x.shape());
  const float* p = x.data();
  float* o = out.data();
  int64_t n = x.numel();
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) o[i] = f(p[i]);
  return out;
}
}  // namespace

Tensor unary(Unary op, const Tensor& x) {
  switch (op) {
    case Unary::Exp: return unary_impl(x, [](float v) { return std::exp(v); });
    case Unary::Log: return unary_impl(x, [](float v) { return std::log(v); });
    // vectorised Cephes forms (~3 ulp, simd/math.h); NaN passes through as libm's would
    case Unary::Tanh: return unary_impl(x, [](float v) { return v != v ? v : simd::tanh(v); });
    case Unary::Sigmoid: return unary_impl(x, [](float v) { return v != v ? v : simd::sigmoid(v); });
    case Unary::Relu: return unary_impl(x, [](float v) { return v > 0 ? v : 0.0f; });
    case Unary::Sqrt: return unary_impl(x, [](float v) { return std::sqrt(v); });
  }
  throw std::logic_error("unary: unknown op");
}

Tensor expand_to(const Tensor& x, const Shape& shape) {
  if (x.shape() == shape) return x;
  if (broadcast_shapes(x.shape(), shape) != shape)
    throw std::invalid_argument("expand_to: " + x.shape().str() + " does not broadcast to " + shape.str());
  Tensor out = Tensor::empty(shape);
  if (shape.rank() == 0 || shape.numel() == 0) {
    if (shape.numel()) out.data()[0] = x.data()[0];
    return out;
  }
  auto st = detail::broadcast_strides(x.shape(), shape);
  int64_t inner = shape.back(), rows = shape.numel() / inner, s_last = st[shape.rank() - 1];
  const float* px = x.data();
  float* po = out.data();
#pragma omp parallel for if (shape.numel() > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = px + detail::row_offset(r, shape, st);
    float* o = po + r * inner;
    if (s_last == 1) {
      for (int64_t i = 0; i < inner; ++i) o[i] = xr[i];
    } else {
      for (int64_t i = 0; i < inner; ++i) o[i] = xr[0];
    }
  }
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, float value) {
  Shape os = broadcast_shapes(x.shape(), mask.shape());
  if (os != x.shape())
    throw std::invalid_argument("masked_fill: mask " + mask.shape().str() + " does not broadcast to " + x.shape().str());
  Tensor m = expand_to(mask, x.shape());
  Tensor out = Tensor::empty(x.shape());
  const float *p = x.data(), *pm = m.data();
  float* o = out.data();
  int64_t n = x.numel();
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) o[i] = pm[i] != 0.0f ? p[i] : value;
  return out;
}

}  // namespace attn::kernels
