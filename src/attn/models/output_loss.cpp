#include "attn/models/output_loss.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/kernels/output_loss.h"
#include "attn/tensor/kernels.h"

namespace attn::models {
int64_t output_block_rows(int64_t V) {
  return std::max(kOutputBlockMinRows, kOutputBlockBytes / (std::max<int64_t>(V, 1) * int64_t(sizeof(float))));
}

Tensor output_cross_entropy(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& targets,
                            const CrossEntropyOptions& opt, int64_t block_rows) {
  if (!x.defined() || !W.defined() || !targets.defined() || x.dim() != 2 || W.dim() != 2 || x.size(1) != W.size(1) ||
      targets.numel() != x.size(0) || (b.defined() && (b.dim() != 1 || b.size(0) != W.size(0))))
    throw std::invalid_argument("output_cross_entropy: x " + shape_str(x) + ", W " + shape_str(W) + ", b " +
                                (b.defined() ? b.shape().str() : "none") + ", targets " + shape_str(targets) +
                                " (expects x [N, R], W [V, R], b [V], targets [N])");
  if (opt.label_smoothing < 0 || opt.label_smoothing >= 1)
    throw std::invalid_argument("output_cross_entropy: label_smoothing outside [0, 1)");
  const int64_t N = x.size(0), R = x.size(1), V = W.size(0);
  const float eps = opt.label_smoothing;
  const float* pt = targets.data();
  int64_t count = 0;
  for (int64_t r = 0; r < N; ++r) {
    const int64_t t = int64_t(pt[r]);
    if (t == opt.ignore_index) continue;
    if (t < 0 || t >= V || float(t) != pt[r])
      throw std::invalid_argument("output_cross_entropy: target " + std::to_string(pt[r]) + " at row " +
                                  std::to_string(r) + " outside [0, " + std::to_string(V) + ")");
    ++count;
  }
  const bool grad = autograd::needs_grad({&x, &W, &b});
  Tensor dx, dW, db;
  if (grad) {
    dx = Tensor::zeros({N, R});  // rows with target == ignore_index keep zero
    dW = Tensor::zeros({V, R});
    if (b.defined()) db = Tensor::zeros({V});
  }
  // Only the rows that count go through the GEMMs (padding can be a third of a
  // batch): they are gathered per_block at a time into xb.
  std::vector<int64_t> kept;
  kept.reserve(size_t(count));
  for (int64_t r = 0; r < N; ++r)
    if (int64_t(pt[r]) != opt.ignore_index) kept.push_back(r);
  const int64_t per_block = block_rows > 0 ? block_rows : output_block_rows(V);
  const int64_t rows = std::min<int64_t>(count, per_block);
  Tensor block = Tensor::empty({std::max<int64_t>(rows, 1), V}), xb = Tensor::empty({std::max<int64_t>(rows, 1), R}),
         dxb = Tensor::empty({std::max<int64_t>(rows, 1), R});
  const float inv_count = count ? 1.0f / float(count) : 0.0f;
  double total = 0;
  for (int64_t k0 = 0; k0 < count; k0 += per_block) {
    const int64_t n = std::min(per_block, count - k0);
    float* lg = block.data();
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(xb.data() + i * R, x.data() + kept[size_t(k0 + i)] * R, size_t(R) * sizeof(float));
    // logits = x W^T + b
    if (b.defined())
      for (int64_t i = 0; i < n; ++i) std::memcpy(lg + i * V, b.data(), size_t(V) * sizeof(float));
    kernels::gemm(false, true, n, V, R, 1.0f, xb.data(), R, W.data(), R, b.defined() ? 1.0f : 0.0f, lg, V);
    // softmax, loss and (grad) dlogits of the block's rows, in place
    output_loss_kernels::LossBlock lb;
    lb.logits = lg, lb.n = n, lb.V = V, lb.targets = pt, lb.rows = kept.data() + k0, lb.eps = eps,
    lb.inv_count = inv_count, lb.grad = grad;
    total += output_loss_kernels::loss_block(lb);
    if (grad) {
      // logits = x W^T + b  =>  dx = dlogits W,  dW += dlogits^T x,  db += column sums of dlogits
      kernels::gemm(false, false, n, R, V, 1.0f, lg, V, W.data(), R, 0.0f, dxb.data(), R);
      for (int64_t i = 0; i < n; ++i)
        std::memcpy(dx.data() + kept[size_t(k0 + i)] * R, dxb.data() + i * R, size_t(R) * sizeof(float));
      kernels::gemm(true, false, V, R, n, 1.0f, lg, V, xb.data(), R, 1.0f, dW.data(), R);
      if (b.defined()) output_loss_kernels::add_column_sums(lg, n, V, db.data());
    }
  }
  Tensor out = Tensor::scalar(count ? float(total / double(count)) : 0.0f);
  autograd::record("output_cross_entropy", {x, W, b}, out,
                   [dx, dW, db](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     // the loss is linear in its incoming gradient g: scale the saved gradients of g = 1
                     const float g = d[0].item();
                     auto scaled = [g](const Tensor& t) { return t.defined() && g != 1.0f ? kernels::affine(t, g, 0.0f) : t; };
                     return {scaled(dx), scaled(dW), scaled(db)};
                   });
  return out;
}

Tensor log_softmax_rows(const Tensor& logits) {
  if (!logits.defined() || logits.dim() != 2)
    throw std::invalid_argument("log_softmax_rows: expects logits [N, V], got " + shape_str(logits));
  const int64_t N = logits.size(0), V = logits.size(1);
  Tensor out = Tensor::empty({N, V});
  output_loss_kernels::log_softmax_rows(logits.data(), N, V, out.data());
  return out;
}

}  // namespace attn::models
