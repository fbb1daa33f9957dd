// Softmax over the last axis: shapes and masks. The row loops are
// kernels/softmax.cpp, compiled per instruction set.
#include <stdexcept>

#include "attn/kernels/softmax.h"
#include "attn/tensor/kernels.h"

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
  softmax_rows::forward(x.data(), mask.defined() ? mask.data() : nullptr, rows, n, log, out.data());
  return out;
}

Tensor softmax_lastdim_backward(const Tensor& y, const Tensor& dy, const Tensor& mask_in, bool log) {
  check_same_shape(y, dy, "softmax backward");
  Tensor mask = expanded_mask(mask_in, y.shape());
  int64_t n = y.shape().back(), rows = n ? y.numel() / n : 0;
  Tensor dx = Tensor::empty(y.shape());
  softmax_rows::backward(y.data(), dy.data(), mask.defined() ? mask.data() : nullptr, rows, n, log, dx.data());
  return dx;
}

}  // namespace attn::kernels
