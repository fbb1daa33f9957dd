// GELU and the fused linear + activation op of the position-wise feed-forward
// (nn/feed_forward.h): y = act(x W^T + b) as one node on the tape.
#include <stdexcept>

#include "attn/autograd/ops.h"
#include "attn/kernels/activation.h"
#include "attn/tensor/kernels.h"

namespace attn {
namespace {

kernels::activation::Kind kind(Activation act) {
  return act == Activation::GELU ? kernels::activation::Kind::GELU : kernels::activation::Kind::ReLU;
}

}  // namespace

Tensor gelu(const Tensor& x) {
  Tensor out = Tensor::empty(x.shape());
  kernels::activation::gelu(x.data(), out.data(), x.numel());
  autograd::record("gelu", {x}, out, [x = x.detach()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    Tensor dx = Tensor::empty(x.shape());  // dx = dy * gelu'(x)
    kernels::activation::act_backward(kernels::activation::Kind::GELU, x.data(), d[0].data(), dx.data(), x.numel());
    return {dx};
  });
  return out;
}

Tensor linear_act(const Tensor& x, const Tensor& w, const Tensor& bias, Activation act) {
  if (w.dim() != 2 || x.dim() < 1 || x.size(-1) != w.size(1))
    throw std::invalid_argument("linear_act: input " + x.shape().str() + " does not match weight " + w.shape().str() +
                                " (expects [..., in] and [out, in])");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != w.size(0)))
    throw std::invalid_argument("linear_act: bias " + bias.shape().str() + " for weight " + w.shape().str());
  const int64_t in = w.size(1), outf = w.size(0), rows = x.numel() / (in ? in : 1);
  std::vector<int64_t> dims(x.shape().begin(), x.shape().end() - 1);
  dims.push_back(outf);
  const Shape shape(dims.begin(), dims.end());
  // h[rows, out] = x[rows, in] W^T[in, out]
  Tensor h = Tensor::empty(shape);
  kernels::gemm(false, true, rows, outf, in, 1.0f, x.data(), in, w.data(), in, 0.0f, h.data(), outf);
  // bias and activation in one pass; GELU keeps h (+ bias) for its backward, ReLU only y
  Tensor out = act == Activation::GELU ? Tensor::empty(shape) : h;
  kernels::activation::bias_act(kind(act), h.data(), out.data(), bias.defined() ? bias.data() : nullptr, rows, outf);
  const bool gx = x.requires_grad(), gw = w.requires_grad(), gbias = bias.defined() && bias.requires_grad();
  Tensor saved = act == Activation::GELU ? h : Tensor();  // ReLU reads its own output (captured detached below)
  autograd::record("linear_act", {x, w, bias}, out,
                   [x = x.detach(), w = w.detach(), saved, out = out.detach(), act, rows, in, outf, gx, gw,
                    gbias](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     // y = act(h): dh = dy * act'(h)
                     Tensor dh = Tensor::empty(Shape{rows, outf});
                     kernels::activation::act_backward(kind(act), act == Activation::GELU ? saved.data() : out.data(),
                                                       d[0].data(), dh.data(), rows * outf);
                     Tensor dx, dw, db;
                     if (gx) {  // h = x W^T + b: dx[rows, in] = dh[rows, out] W[out, in]
                       dx = Tensor::empty(x.shape());
                       kernels::gemm(false, false, rows, in, outf, 1.0f, dh.data(), outf, w.data(), in, 0.0f, dx.data(), in);
                     }
                     if (gw) {  // dW[out, in] = dh^T[out, rows] x[rows, in]
                       dw = Tensor::empty(w.shape());
                       kernels::gemm(true, false, outf, in, rows, 1.0f, dh.data(), outf, x.data(), in, 0.0f, dw.data(), in);
                     }
                     if (gbias) db = kernels::sum_axis(dh, 0, false);  // db = sum_rows dh
                     return {dx, dw, db};
                   });
  return out;
}

}  // namespace attn
