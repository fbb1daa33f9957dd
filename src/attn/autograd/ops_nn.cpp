// Fused primitives of the nn layers: embedding, dropout, layer_norm, cross_entropy.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/layer_norm.h"
#include "attn/tensor/kernels.h"

namespace attn {

Tensor embedding(const Tensor& table, const Tensor& ids, int64_t padding_idx) {
  Tensor out = kernels::gather_rows(table, ids);
  autograd::record("embedding", {table}, out,
                   [ids = ids.detach(), ts = table.shape(), padding_idx](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     // out[i] = table[ids[i]]  =>  dtable[ids[i]] += dout[i]
                     Tensor dt = Tensor::zeros(ts);
                     kernels::scatter_add_rows(dt, ids, d[0], padding_idx);
                     return {dt};
                   });
  return out;
}

void dropout_mask(float* out, int64_t n, float p, Rng& rng) {
  const float scale = 1.0f / (1.0f - p);
  for (int64_t i = 0; i < n; ++i) out[i] = rng.uniform() < p ? 0.0f : scale;
}

Tensor dropout(const Tensor& x, float p, bool training, Rng& rng) {
  if (p < 0.0f || p >= 1.0f) throw std::invalid_argument("dropout: p = " + std::to_string(p) + " outside [0, 1)");
  if (!training || p == 0.0f) return x;
  Tensor mask = Tensor::empty(x.shape());  // 0 or 1/(1-p)
  dropout_mask(mask.data(), mask.numel(), p, rng);
  Tensor out = kernels::mul(x, mask);
  autograd::record("dropout", {x}, out, [mask](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {kernels::mul(d[0], mask)};
  });
  return out;
}

Tensor layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, float eps) {
  int64_t n = x.size(-1), rows = x.numel() / (n ? n : 1);
  if (w.numel() != n || b.numel() != n)
    throw std::invalid_argument("layer_norm: weight " + w.shape().str() + " / bias " + b.shape().str() + " for input " +
                                x.shape().str());
  Tensor out = Tensor::empty(x.shape());
  Tensor xhat = Tensor::empty(x.shape());  // saved for backward
  Tensor rstd = Tensor::empty(Shape{rows});
  const float *px = x.data(), *pw = w.data(), *pb = b.data();
  float *po = out.data(), *ph = xhat.data(), *pr = rstd.data();
  constexpr int64_t kRows = 16;  // rows per call
#pragma omp parallel for if (x.numel() > kParallelGrain)
  for (int64_t r0 = 0; r0 < rows; r0 += kRows)
    kernels::norm::layer_norm_rows(px + r0 * n, std::min(kRows, rows - r0), n, pw, pb, eps, po + r0 * n, ph + r0 * n,
                                   pr + r0);
  autograd::record("layer_norm", {x, w, b}, out,
                   [xhat, rstd, w = w.detach(), n, rows](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     Tensor dx = Tensor::empty(xhat.shape()), dw = Tensor::empty(w.shape()), db = Tensor::empty(w.shape());
                     const float *pd = d[0].data(), *ph = xhat.data(), *pr = rstd.data(), *pw = w.data();
                     float* pdx = dx.data();
                     // Rows in a fixed number of chunks, each with its own dw, db partial sums (double),
                     // added in chunk order: parallel, and the same result for any thread count.
                     const int64_t chunks = std::min<int64_t>(rows, rows * n > kParallelGrain ? 16 : 1);
                     std::vector<double> sdw(size_t(chunks * n), 0.0), sdb(size_t(chunks * n), 0.0);
#pragma omp parallel for if (chunks > 1)
                     for (int64_t c = 0; c < chunks; ++c) {
                       double *cw = sdw.data() + c * n, *cb = sdb.data() + c * n;
                       for (int64_t r = rows * c / chunks; r < rows * (c + 1) / chunks; ++r) {
                         const float *dr = pd + r * n, *hr = ph + r * n;
                         // y = xhat*w + b: dw += dy*xhat, db += dy, dxhat = dy*w
                         // dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat*xhat))
                         double m1 = 0, m2 = 0;
                         for (int64_t i = 0; i < n; ++i) {
                           double dh = double(dr[i]) * pw[i];
                           m1 += dh;
                           m2 += dh * hr[i];
                           cw[i] += double(dr[i]) * hr[i];
                           cb[i] += dr[i];
                         }
                         m1 /= double(n);
                         m2 /= double(n);
                         for (int64_t i = 0; i < n; ++i)
                           pdx[r * n + i] = float(pr[r] * (double(dr[i]) * pw[i] - m1 - hr[i] * m2));
                       }
                     }
                     for (int64_t i = 0; i < n; ++i) {
                       double tw = 0, tb = 0;
                       for (int64_t c = 0; c < chunks; ++c) tw += sdw[size_t(c * n + i)], tb += sdb[size_t(c * n + i)];
                       dw.data()[i] = float(tw);
                       db.data()[i] = float(tb);
                     }
                     return {dx, dw, db};
                   });
  return out;
}

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& opt) {
  if (logits.dim() != 2 || targets.numel() != logits.size(0))
    throw std::invalid_argument("cross_entropy: logits " + logits.shape().str() + " and targets " +
                                targets.shape().str() + " (expects [N, V] and [N])");
  int64_t N = logits.size(0), V = logits.size(1);
  float eps = opt.label_smoothing;
  Tensor probs = Tensor::empty(logits.shape());  // softmax, saved for backward
  const float *pl = logits.data(), *pt = targets.data();
  float* pp = probs.data();
  for (int64_t r = 0; r < N; ++r) {  // validate before the parallel loop (no throw inside it)
    int64_t t = int64_t(pt[r]);
    if (t != opt.ignore_index && (t < 0 || t >= V || float(t) != pt[r]))
      throw std::invalid_argument("cross_entropy: target " + std::to_string(pt[r]) + " at row " + std::to_string(r) +
                                  " outside [0, " + std::to_string(V) + ")");
  }
  int64_t count = 0;
  double total = 0;
#pragma omp parallel for reduction(+ : total, count) if (logits.numel() > kParallelGrain)
  for (int64_t r = 0; r < N; ++r) {
    const float* lr = pl + r * V;
    float* prow = pp + r * V;
    int64_t t = int64_t(pt[r]);
    if (t == opt.ignore_index) {
      for (int64_t i = 0; i < V; ++i) prow[i] = 0.0f;
      continue;
    }
    float mx = -std::numeric_limits<float>::infinity();
    for (int64_t i = 0; i < V; ++i) mx = std::max(mx, lr[i]);
    float s = 0, sum_logits = 0;
    for (int64_t i = 0; i < V; ++i) {
      float e = std::exp(lr[i] - mx);
      prow[i] = e;
      s += e;
      sum_logits += lr[i];
    }
    float lse = mx + std::log(s);
    float inv = 1.0f / s;
    for (int64_t i = 0; i < V; ++i) prow[i] *= inv;
    // -log p[t] and the mean over classes of -log p[c]
    float nll = lse - lr[t], smooth = lse - sum_logits / float(V);
    total += (1.0f - eps) * nll + eps * smooth;
    count += 1;
  }
  Tensor out = Tensor::scalar(count ? float(total / double(count)) : 0.0f);
  autograd::record("cross_entropy", {logits}, out,
                   [probs, targets = targets.detach(), count, eps, V, N, ignore = opt.ignore_index](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     // dlogits = (softmax - ((1-eps) onehot(t) + eps/V)) / count for kept rows
                     Tensor dl = Tensor::empty(probs.shape());
                     float g = count ? d[0].item() / float(count) : 0.0f;
                     const float *pp = probs.data(), *pt = targets.data();
                     float* o = dl.data();
#pragma omp parallel for if (probs.numel() > kParallelGrain)
                     for (int64_t r = 0; r < N; ++r) {
                       int64_t t = int64_t(pt[r]);
                       float* orow = o + r * V;
                       if (t == ignore) {
                         for (int64_t i = 0; i < V; ++i) orow[i] = 0.0f;
                         continue;
                       }
                       const float* prow = pp + r * V;
                       for (int64_t i = 0; i < V; ++i) orow[i] = g * (prow[i] - eps / float(V));
                       orow[t] -= g * (1.0f - eps);
                     }
                     return {dl};
                   });
  return out;
}

}  // namespace attn
