// matmul and linear: forward and backward as GEMMs with transpose flags.
#include <stdexcept>

#include "attn/autograd/ops.h"
#include "attn/tensor/kernels.h"

namespace attn {

namespace {
struct MatmulDims {
  int64_t batch, M, N, K, stride_a, stride_b;
  Shape out;
};

MatmulDims matmul_dims(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  if (a.dim() < 2 || b.dim() < 2)
    throw std::invalid_argument("matmul: operands must be at least 2-D, got " + a.shape().str() + " and " + b.shape().str());
  MatmulDims m;
  int ra = a.dim(), rb = b.dim();
  m.M = ta ? a.size(-1) : a.size(-2);
  int64_t Ka = ta ? a.size(-2) : a.size(-1);
  int64_t Kb = tb ? b.size(-1) : b.size(-2);
  m.N = tb ? b.size(-2) : b.size(-1);
  m.K = Ka;
  if (Ka != Kb)
    throw std::invalid_argument("matmul: inner sizes differ: " + a.shape().str() + (ta ? "^T" : "") + " x " +
                                b.shape().str() + (tb ? "^T" : ""));
  const int64_t matrix = a.size(-1) * a.size(-2);  // one [.., m, k] matrix (0 for an empty one)
  m.batch = a.numel() / (matrix != 0 ? matrix : 1);
  if (rb > 2) {
    bool same = ra == rb;
    for (int i = 0; same && i < ra - 2; ++i) same = a.shape()[i] == b.shape()[i];
    if (!same) throw std::invalid_argument("matmul: batch axes differ: " + a.shape().str() + " and " + b.shape().str());
  }
  m.stride_a = m.M * m.K;
  m.stride_b = rb > 2 ? m.K * m.N : 0;
  std::vector<int64_t> dims(a.shape().begin(), a.shape().end() - 2);
  dims.push_back(m.M);
  dims.push_back(m.N);
  m.out = Shape(dims.begin(), dims.end());
  return m;
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b, bool ta, bool tb) {
  MatmulDims m = matmul_dims(a, b, ta, tb);
  Tensor out = Tensor::empty(m.out);
  kernels::gemm_batched(ta, tb, m.batch, m.M, m.N, m.K, 1.0f, a.data(), m.stride_a, b.data(), m.stride_b, 0.0f,
                        out.data(), m.M * m.N);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  autograd::record("matmul", {a, b}, out,
                   [a = a.detach(), b = b.detach(), ta, tb, m, ga, gb](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     const Tensor& dc = d[0];  // [batch, M, N]
                     Tensor da, db;
                     if (ga) {
                       // C = A B: dA = dC B^T; with A stored transposed (ta): dA^T = B dC^T
                       da = Tensor::empty(a.shape());
                       if (!ta)
                         kernels::gemm_batched(false, !tb, m.batch, m.M, m.K, m.N, 1.0f, dc.data(), m.M * m.N, b.data(),
                                               m.stride_b, 0.0f, da.data(), m.M * m.K);
                       else
                         kernels::gemm_batched(tb, true, m.batch, m.K, m.M, m.N, 1.0f, b.data(), m.stride_b, dc.data(),
                                               m.M * m.N, 0.0f, da.data(), m.M * m.K);
                     }
                     if (gb) {
                       // dB = A^T dC; with B stored transposed (tb): dB^T = dC^T A
                       db = Tensor::zeros(b.shape());
                       if (m.stride_b == 0 && !ta) {
                         // one B for every batch entry and A not transposed: stack the batch
                         // into the rows, one GEMM over [batch*M] rows sums over the batch
                         int64_t R = m.batch * m.M;
                         if (!tb)
                           kernels::gemm(true, false, m.K, m.N, R, 1.0f, a.data(), m.K, dc.data(), m.N, 0.0f, db.data(), m.N);
                         else
                           kernels::gemm(true, false, m.N, m.K, R, 1.0f, dc.data(), m.N, a.data(), m.K, 0.0f, db.data(), m.K);
                       } else {
                         int64_t batches = m.stride_b ? m.batch : 1;
                         // a shared B sums over the batch: accumulate with beta = 1
                         for (int64_t i = 0; i < m.batch; i += batches) {
                           const float* ap = a.data() + i * m.stride_a;
                           const float* dcp = dc.data() + i * m.M * m.N;
                           if (!tb)
                             kernels::gemm_batched(!ta, false, batches, m.K, m.N, m.M, 1.0f, ap, m.stride_a, dcp, m.M * m.N,
                                                   1.0f, db.data(), m.K * m.N);
                           else
                             kernels::gemm_batched(true, ta, batches, m.N, m.K, m.M, 1.0f, dcp, m.M * m.N, ap, m.stride_a,
                                                   1.0f, db.data(), m.K * m.N);
                         }
                       }
                     }
                     return {da, db};
                   });
  return out;
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& bias) {
  if (w.dim() != 2 || x.dim() < 1 || x.size(-1) != w.size(1))
    throw std::invalid_argument("linear: input " + x.shape().str() + " does not match weight " + w.shape().str() +
                                " (expects [..., in] and [out, in])");
  if (bias.defined() && (bias.dim() != 1 || bias.size(0) != w.size(0)))
    throw std::invalid_argument("linear: bias " + bias.shape().str() + " for weight " + w.shape().str());
  int64_t in = w.size(1), outf = w.size(0), rows = x.numel() / (in ? in : 1);
  std::vector<int64_t> dims(x.shape().begin(), x.shape().end() - 1);
  dims.push_back(outf);
  Tensor out = Tensor::empty(Shape(dims.begin(), dims.end()));
  float* po = out.data();
  if (bias.defined()) {
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < outf; ++j) po[r * outf + j] = bias.data()[j];
  }
  // y[rows, out] = x[rows, in] W^T[in, out] (+ bias already in y)
  kernels::gemm(false, true, rows, outf, in, 1.0f, x.data(), in, w.data(), in, bias.defined() ? 1.0f : 0.0f, po, outf);
  bool gx = x.requires_grad(), gw = w.requires_grad(), gbias = bias.defined() && bias.requires_grad();
  autograd::record("linear", {x, w, bias}, out,
                   [x = x.detach(), w = w.detach(), rows, in, outf, gx, gw, gbias](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     const float* dy = d[0].data();  // [rows, out]
                     Tensor dx, dw, db;
                     if (gx) {  // dx[rows, in] = dy[rows, out] W[out, in]
                       dx = Tensor::empty(x.shape());
                       kernels::gemm(false, false, rows, in, outf, 1.0f, dy, outf, w.data(), in, 0.0f, dx.data(), in);
                     }
                     if (gw) {  // dW[out, in] = dy^T[out, rows] x[rows, in]
                       dw = Tensor::empty(w.shape());
                       kernels::gemm(true, false, outf, in, rows, 1.0f, dy, outf, x.data(), in, 0.0f, dw.data(), in);
                     }
                     if (gbias) db = kernels::sum_axis(d[0].view(Shape{rows, outf}), 0, false);  // db = sum_rows dy
                     return {dx, dw, db};
                   });
  return out;
}

}  // namespace attn
