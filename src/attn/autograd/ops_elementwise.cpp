// Elementwise and reduction ops with their backward.
#include <cmath>

#include "attn/autograd/ops.h"
#include "attn/tensor/kernels.h"

namespace attn {
using kernels::Binary;
using kernels::Unary;

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = kernels::binary(Binary::Add, a, b);
  Shape sa = a.shape(), sb = b.shape();
  autograd::record("add", {a, b}, out, [sa, sb](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out = a + b  =>  da = dout, db = dout (summed over broadcast axes)
    return {kernels::sum_to(d[0], sa), kernels::sum_to(d[0], sb)};
  });
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = kernels::binary(Binary::Sub, a, b);
  Shape sa = a.shape(), sb = b.shape();
  autograd::record("sub", {a, b}, out, [sa, sb](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out = a - b  =>  da = dout, db = -dout
    return {kernels::sum_to(d[0], sa), kernels::sum_to(kernels::affine(d[0], -1.0f, 0.0f), sb)};
  });
  return out;
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = kernels::binary(Binary::Mul, a, b);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  autograd::record("mul", {a, b}, out, [a = a.detach(), b = b.detach(), ga, gb](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out = a * b  =>  da = dout * b, db = dout * a
    Tensor da = ga ? kernels::sum_to(kernels::mul(d[0], b), a.shape()) : Tensor();
    Tensor db = gb ? kernels::sum_to(kernels::mul(d[0], a), b.shape()) : Tensor();
    return {da, db};
  });
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = kernels::binary(Binary::Div, a, b);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  autograd::record("div", {a, b}, out,
                   [b = b.detach(), out = out.detach(), sa = a.shape(), ga, gb](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     // out = a / b  =>  da = dout / b, db = -dout * out / b
                     Tensor da_full = kernels::binary(Binary::Div, d[0], b);
                     Tensor da = ga ? kernels::sum_to(da_full, sa) : Tensor();
                     Tensor db = gb ? kernels::sum_to(kernels::affine(kernels::mul(da_full, out), -1.0f, 0.0f), b.shape()) : Tensor();
                     return {da, db};
                   });
  return out;
}

Tensor affine(const Tensor& x, float alpha, float beta) {
  Tensor out = kernels::affine(x, alpha, beta);
  autograd::record("affine", {x}, out, [alpha](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out = alpha * x + beta  =>  dx = alpha * dout
    return {kernels::affine(d[0], alpha, 0.0f)};
  });
  return out;
}

namespace {
// dx = dout * f'(x), with f' written in terms of the saved tensor `s` (x or out)
template <class F>
Tensor unary_backward(const Tensor& dout, const Tensor& s, F fprime) {
  Tensor dx = Tensor::empty(s.shape());
  const float *pd = dout.data(), *ps = s.data();
  float* o = dx.data();
  int64_t n = s.numel();
#pragma omp parallel for simd if (n > (1 << 15))
  for (int64_t i = 0; i < n; ++i) o[i] = pd[i] * fprime(ps[i]);
  return dx;
}
}  // namespace

Tensor exp(const Tensor& x) {
  Tensor out = kernels::unary(Unary::Exp, x);
  autograd::record("exp", {x}, out, [out = out.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {unary_backward(d[0], out, [](float y) { return y; })};  // d exp = exp
  });
  return out;
}

Tensor log(const Tensor& x) {
  Tensor out = kernels::unary(Unary::Log, x);
  autograd::record("log", {x}, out, [x = x.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {unary_backward(d[0], x, [](float v) { return 1.0f / v; })};  // d log x = 1/x
  });
  return out;
}

Tensor tanh(const Tensor& x) {
  Tensor out = kernels::unary(Unary::Tanh, x);
  autograd::record("tanh", {x}, out, [out = out.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {unary_backward(d[0], out, [](float y) { return 1.0f - y * y; })};  // 1 - tanh^2
  });
  return out;
}

Tensor sigmoid(const Tensor& x) {
  Tensor out = kernels::unary(Unary::Sigmoid, x);
  autograd::record("sigmoid", {x}, out, [out = out.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {unary_backward(d[0], out, [](float y) { return y * (1.0f - y); })};  // s (1 - s)
  });
  return out;
}

Tensor relu(const Tensor& x) {
  Tensor out = kernels::unary(Unary::Relu, x);
  autograd::record("relu", {x}, out, [out = out.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {unary_backward(d[0], out, [](float y) { return y > 0.0f ? 1.0f : 0.0f; })};
  });
  return out;
}

Tensor sum(const Tensor& x, int axis, bool keepdim) {
  int a = x.shape().normalize_axis(axis);
  Tensor out = kernels::sum_axis(x, a, keepdim);
  autograd::record("sum", {x}, out, [xs = x.shape(), a](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // every input element contributed once: broadcast dout back along the axis
    Shape kept = xs;
    kept[a] = 1;
    return {kernels::expand_to(d[0].view(kept), xs)};
  });
  return out;
}

Tensor mean(const Tensor& x, int axis, bool keepdim) {
  return affine(sum(x, axis, keepdim), 1.0f / float(x.shape().at(axis)));
}

Tensor sum_all(const Tensor& x) {
  Tensor out = Tensor::scalar(float(kernels::sum_all(x)));
  autograd::record("sum_all", {x}, out, [xs = x.shape()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {Tensor::full(xs, d[0].item())};
  });
  return out;
}

Tensor mean_all(const Tensor& x) { return affine(sum_all(x), 1.0f / float(x.numel() ? x.numel() : 1)); }

}  // namespace attn
