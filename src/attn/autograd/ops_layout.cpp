// reshape, permute, concat, slice, masked_fill.
#include <limits>
#include <stdexcept>

#include "attn/autograd/ops.h"
#include "attn/tensor/kernels.h"

namespace attn {

Tensor reshape(const Tensor& x, const Shape& shape) {
  Tensor out = x.view(shape);
  autograd::record("reshape", {x}, out, [xs = x.shape()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {d[0].view(xs)};
  });
  return out;
}

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  Tensor out = kernels::permute(x, perm);
  autograd::record("permute", {x}, out, [perm](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    std::vector<int> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = int(i);
    return {kernels::permute(d[0], inv)};
  });
  return out;
}

Tensor transpose(const Tensor& x, int axis0, int axis1) {
  std::vector<int> p(x.dim());
  for (int i = 0; i < x.dim(); ++i) p[i] = i;
  std::swap(p[x.shape().normalize_axis(axis0)], p[x.shape().normalize_axis(axis1)]);
  return permute(x, p);
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  Tensor out = kernels::concat(xs, axis);
  int a = out.shape().normalize_axis(axis);
  std::vector<int64_t> sizes;
  for (const Tensor& t : xs) sizes.push_back(t.shape()[a]);
  autograd::record("concat", xs, out, [sizes, a](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    std::vector<Tensor> dxs;
    int64_t start = 0;
    for (int64_t s : sizes) {
      dxs.push_back(kernels::slice(d[0], a, start, s));
      start += s;
    }
    return dxs;
  });
  return out;
}

Tensor slice(const Tensor& x, int axis, int64_t start, int64_t length) {
  int a = x.shape().normalize_axis(axis);
  Tensor out = kernels::slice(x, a, start, length);
  autograd::record("slice", {x}, out, [xs = x.shape(), a, start](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    Tensor dx = Tensor::zeros(xs);
    kernels::slice_add_inplace(dx, d[0], a, start);
    return {dx};
  });
  return out;
}

std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<int64_t>& sizes) {
  int a = x.shape().normalize_axis(axis);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  if (total != x.shape()[a])
    throw std::invalid_argument("split: sizes sum to " + std::to_string(total) + ", axis " + std::to_string(a) +
                                " of " + x.shape().str() + " has " + std::to_string(x.shape()[a]));
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t s : sizes) {
    out.push_back(slice(x, a, start, s));
    start += s;
  }
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, float value) {
  Tensor out = kernels::masked_fill(x, mask, value);
  autograd::record("masked_fill", {x}, out, [mask = mask.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // filled positions are constants: zero gradient there
    return {kernels::masked_fill(d[0], mask, 0.0f)};
  });
  return out;
}

}  // namespace attn
