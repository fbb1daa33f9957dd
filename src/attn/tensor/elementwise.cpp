// The element-wise tensor kernels: shapes, broadcasting and allocation. The
// array loops are kernels/elementwise.cpp, compiled per instruction set.
#include <stdexcept>

#include "attn/cpu/threading.h"
#include "attn/kernels/elementwise.h"
#include "attn/tensor/broadcast.h"
#include "attn/tensor/kernels.h"

namespace attn::kernels {

static_assert(elementwise::kMaxRank == kMaxRank);

namespace {

// the kernels' view of an output shape and the strides of a and b into it
elementwise::Rows rows_of(const Shape& out, const std::array<int64_t, kMaxRank>& st_a,
                          const std::array<int64_t, kMaxRank>& st_b) {
  elementwise::Rows r;
  r.rank = out.rank();
  for (int i = 0; i < r.rank; ++i) r.dims[i] = out[i], r.st_a[i] = st_a[i], r.st_b[i] = st_b[i];
  return r;
}

}  // namespace

Tensor binary(Binary op, const Tensor& a, const Tensor& b) {
  if (a.shape() == b.shape()) {
    Tensor out = Tensor::empty(a.shape());
    elementwise::binary(op, a.data(), b.data(), out.data(), out.numel());
    return out;
  }
  Shape os = broadcast_shapes(a.shape(), b.shape());
  Tensor out = Tensor::empty(os);
  if (os.rank() == 0) {  // a scalar: no loop
    elementwise::binary(op, a.data(), b.data(), out.data(), 1);
    return out;
  }
  const auto st_a = detail::broadcast_strides(a.shape(), os), st_b = detail::broadcast_strides(b.shape(), os);
  elementwise::binary_rows(op, a.data(), b.data(), out.data(), rows_of(os, st_a, st_b));
  return out;
}

void add_inplace(Tensor& dst, const Tensor& src, float alpha) {
  if (dst.numel() != src.numel())
    throw std::invalid_argument("add_inplace: " + src.shape().str() + " into " + dst.shape().str());
  elementwise::add_scaled(dst.data(), src.data(), alpha, dst.numel());
}

Tensor affine(const Tensor& x, float alpha, float beta) {
  Tensor out = Tensor::empty(x.shape());
  elementwise::affine(x.data(), out.data(), x.numel(), alpha, beta);
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
  // out's strides as read as g's shape; rows of g may add into one output row
  elementwise::sum_rows_to(g.data(), out.data(), rows_of(gs, detail::broadcast_strides(shape, gs), {}));
  return out;
}

Tensor unary(Unary op, const Tensor& x) {
  Tensor out = Tensor::empty(x.shape());
  elementwise::unary(op, x.data(), out.data(), x.numel());
  return out;
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
  elementwise::masked_fill(x.data(), m.data(), value, out.data(), x.numel());
  return out;
}

}  // namespace attn::kernels
