// The fused additive-attention decoder step: forward and backward kernels.
#include "attn/attention/additive_step.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "attn/attention/additive_kernels.h"
#include "attn/attention/checks.h"
#include "attn/attention/tile_gemm.h"
#include "attn/attention/transpose.h"
#include "attn/simd/vec.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/threading.h"

namespace attn::attention {
namespace {
using detail::attend_row;
using detail::score_row_backward;

// qp [B, A] = query [B, Qd] W1^T, W1 [A, Qd].
//
// For kLanes <= B <= kMaxTileRows, as qp^T [A, Bp] = W1 query^T on the fused
// kernels' register tile: W1 is the tile's broadcast operand, read in place, and
// query^T [Qd, Bp] (batch rows on the vector lanes, zero-padded to whole vectors)
// its row operand, which stays in L2. A BLAS call packs W1 on every step (2 MB at
// 1024 -> 512), which costs more than the product itself at these sizes:
// measured at B = 64, OpenBLAS 0.77-0.88 ms, this 0.48-0.58 ms; at B = 32,
// 0.44 vs 0.19 ms; at B = 128, 0.83 vs 0.73-0.77 ms. Fewer rows: a tile of 16
// lanes would be mostly padding. More: query^T outgrows L2 and BLAS's packing
// pays off (B = 512: 4.2-4.6 vs 7.7-8.6 ms).
Tensor project_query(const Tensor& query, const Tensor& W1) {
  const int64_t B = query.size(0), Qd = query.size(1), A = W1.size(0);
  Tensor qp = Tensor::empty({B, A});
  constexpr int64_t W = simd::kLanes, kMaxTileRows = 128;
  if (B < W || B > kMaxTileRows) {
    kernels::gemm(false, true, B, A, Qd, 1.0f, query.data(), Qd, W1.data(), Qd, 0.0f, qp.data(), A);
    return qp;
  }
  const int64_t Bp = (B + W - 1) / W * W;
  constexpr int64_t kRows = 64;  // rows of a transpose or of the product per work item
  Tensor qt = Tensor::empty({Qd, Bp}), ct = Tensor::empty({A, Bp});
  const float *pq = query.data(), *pw = W1.data();
  float *pqt = qt.data(), *pct = ct.data(), *pqp = qp.data();
#pragma omp parallel if (B * A * Qd > kParallelGrain)
  {
#pragma omp for schedule(static)
    for (int64_t k0 = 0; k0 < Qd; k0 += kRows) {
      const int64_t nk = std::min(kRows, Qd - k0);
      detail::transpose_scaled(pq + k0, Qd, pqt + k0 * Bp, Bp, nk, B, 1.0f);
      if (Bp > B)
        for (int64_t k = k0; k < k0 + nk; ++k) std::fill(pqt + k * Bp + B, pqt + (k + 1) * Bp, 0.0f);
    }
#pragma omp for schedule(static)
    for (int64_t a0 = 0; a0 < A; a0 += kRows)
      detail::tile_gemm(std::min(kRows, A - a0), Bp, Qd, pw + a0 * Qd, Qd, 1, pqt, Bp, pct + a0 * Bp, Bp, false);
#pragma omp for schedule(static)
    for (int64_t b0 = 0; b0 < B; b0 += kRows)
      detail::transpose_scaled(pct + b0, Bp, pqp + b0 * A, A, std::min(kRows, B - b0), A, 1.0f);
  }
  return qp;
}

}  // namespace

Tensor project_keys(const Tensor& keys, const Tensor& W2, const Tensor& bias) {
  if (!keys.defined() || keys.dim() != 3)
    throw std::invalid_argument("project_keys: keys " + shape_str(keys) + " (expects [B, Lk, Dk])");
  return linear(keys, W2, bias);
}

AdditiveStepOutput additive_step(const Tensor& query, const Tensor& keys_proj, const Tensor& values, const Tensor& W1,
                                 const Tensor& v, const Tensor& key_lengths) {
  bool ok = query.defined() && keys_proj.defined() && values.defined() && W1.defined() && v.defined() &&
            query.dim() == 2 && keys_proj.dim() == 3 && values.dim() == 3 && W1.dim() == 2 && v.dim() == 1;
  if (ok) {
    const int64_t B = query.size(0), A = v.size(0);
    ok = keys_proj.size(0) == B && values.size(0) == B && keys_proj.size(1) == values.size(1) &&
         keys_proj.size(2) == A && W1.size(0) == A && W1.size(1) == query.size(1);
  }
  if (!ok)
    throw std::invalid_argument(
        "additive_step: query " + shape_str(query) + ", keys_proj " + shape_str(keys_proj) + ", values " +
        shape_str(values) + ", W1 " + shape_str(W1) + ", v " + shape_str(v) +
        " (expects query [B, Qd], keys_proj [B, Lk, A], values [B, Lk, Dv], W1 [A, Qd], v [A])");
  const int64_t B = query.size(0), Qd = query.size(1), Lk = keys_proj.size(1), A = v.size(0), Dv = values.size(2);
  Mask m;
  m.key_lengths = key_lengths;
  detail::check_mask("additive_step", m, B, 1, 1, Lk);

  Tensor qp = project_query(query, W1);  // [B, A]
  Tensor ctx = Tensor::empty({B, Dv}), w = Tensor::empty({B, Lk});
  const float *pqp = qp.data(), *pkp = keys_proj.data(), *pval = values.data(), *pv = v.data();
  const float* plen = key_lengths.defined() ? key_lengths.data() : nullptr;
  float *pctx = ctx.data(), *pw = w.data();
  const bool par = B > 1 && B * Lk * (A + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = plen ? int64_t(plen[b]) : Lk;
    // e_j = v^T tanh(W1 s + U h_j); a = softmax over j < len; c = sum_j a_j h_j
    const bool more = b + 1 < B;  // the next row's keys are fetched during this row's context sum
    attend_row(pqp + b * A, pkp + b * Lk * A, pv, A, pval + b * Lk * Dv, Dv, len, Lk, pw + b * Lk, pctx + b * Dv,
               more ? pkp + (b + 1) * Lk * A : nullptr, more ? (plen ? int64_t(plen[b + 1]) : Lk) * A : 0);
  }

  AdditiveStepOutput out{ctx, w};
  autograd::record(
      "additive_step", {query, keys_proj, values, W1, v}, {&out.context, &out.weights},
      [query = query.detach(), kp = keys_proj.detach(), values = values.detach(), W1 = W1.detach(), v = v.detach(),
       lengths = key_lengths.defined() ? key_lengths.detach() : Tensor(), qp, w = w.detach(), B, Qd, Lk, A, Dv,
       gq = query.requires_grad(), gw1 = W1.requires_grad()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
        const float *pkp = kp.data(), *pval = values.data(), *pv = v.data(), *pqp = qp.data(), *pw = w.data();
        const float* plen = lengths.defined() ? lengths.data() : nullptr;
        const float* dctx = d[0].defined() ? d[0].data() : nullptr;  // [B, Dv]
        const float* dwo = d[1].defined() ? d[1].data() : nullptr;   // [B, Lk]
        // rows j < length are written below; only the padding rows (and dval when
        // no context gradient arrives) need zeros
        Tensor dkp = Tensor::empty(kp.shape()), dval = Tensor::empty(values.shape());
        Tensor dqp = Tensor::zeros({B, A}), dv_rows = Tensor::zeros({B, A}), da_all = Tensor::empty({B, Lk});
        float *pdkp = dkp.data(), *pdval = dval.data(), *pdqp = dqp.data(), *pdvr = dv_rows.data(), *pda = da_all.data();
        const bool par = B > 1 && B * Lk * (A + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par)
        for (int64_t b = 0; b < B; ++b) {
          const int64_t len = plen ? int64_t(plen[b]) : Lk;
          const float* wr = pw + b * Lk;
          float* da = pda + b * Lk;
          std::fill(pdkp + (b * Lk + len) * A, pdkp + (b + 1) * Lk * A, 0.0f);
          std::fill(pdval + (b * Lk + (dctx ? len : 0)) * Dv, pdval + (b + 1) * Lk * Dv, 0.0f);
          float dot = 0.0f;
          // c = sum_j a_j h_j  =>  da_j = dc . h_j (+ the weights' own gradient),  dh_j = a_j dc
          for (int64_t j = 0; j < len; ++j) {
            float g = dwo ? dwo[b * Lk + j] : 0.0f;
            if (dctx) {
              const float* h = pval + (b * Lk + j) * Dv;
              const float* dc = dctx + b * Dv;
              float* dh = pdval + (b * Lk + j) * Dv;
              float s = 0.0f;
#pragma omp simd reduction(+ : s)
              for (int64_t e = 0; e < Dv; ++e) {
                s += dc[e] * h[e];
                dh[e] = wr[j] * dc[e];
              }
              g += s;
            }
            da[j] = g;
            dot += wr[j] * g;
          }
          // a = softmax(e)  =>  de_j = a_j (da_j - sum_k a_k da_k)
          for (int64_t j = 0; j < len; ++j) {
            float de = wr[j] * (da[j] - dot);
            // e_j = v^T tanh(qp + kp_j)
            score_row_backward(pqp + b * A, pkp + (b * Lk + j) * A, pv, de, A, pdkp + (b * Lk + j) * A, false,
                               pdqp + b * A, pdvr + b * A);
          }
        }
        // qp = query W1^T  =>  dquery = dqp W1,  dW1 = dqp^T query;  dv = sum_b rows
        Tensor dquery, dW1;
        if (gq) {
          dquery = Tensor::empty(query.shape());
          kernels::gemm(false, false, B, Qd, A, 1.0f, pdqp, A, W1.data(), Qd, 0.0f, dquery.data(), Qd);
        }
        if (gw1) {
          dW1 = Tensor::empty(W1.shape());
          kernels::gemm(true, false, A, Qd, B, 1.0f, pdqp, A, query.data(), Qd, 0.0f, dW1.data(), Qd);
        }
        Tensor dv = kernels::sum_axis(dv_rows, 0, false);
        return {dquery, dkp, dval, dW1, dv};
      });
  return out;
}

}  // namespace attn::attention
