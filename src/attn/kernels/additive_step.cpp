// The fused additive-attention decoder step: query projection, forward and
// backward rows (see kernels/additive_step.h). An ISA source (kernels/dispatch.h):
// compiled once per instruction set, raw pointers only.
#include "attn/kernels/additive_step.h"

#include "attn/cpu/threading.h"  // kParallelGrain
#include "attn/kernels/additive_math.h"
#include "attn/kernels/tile_gemm.h"
#include "attn/kernels/transpose.h"
#include "attn/simd/vec.h"

namespace attn::attention::additive_step_kernels::ATTN_SIMD_ISA {
namespace {

int64_t min_i(int64_t a, int64_t b) { return a < b ? a : b; }
void fill(float* p, int64_t n, float x) {
  for (int64_t i = 0; i < n; ++i) p[i] = x;
}

// Row b of the backward (see Backward in the header).
void backward_row(const Backward& a, int64_t b) {
  const int64_t Lk = a.Lk, A = a.A, Dv = a.Dv;
  const int64_t len = a.lengths ? int64_t(a.lengths[b]) : Lk;
  const float* wr = a.weights + b * Lk;
  float* da = a.da + b * Lk;
  // rows j < length are written below; only the padding rows (and dvalues when
  // no context gradient arrives) need zeros
  fill(a.dkp + (b * Lk + len) * A, (Lk - len) * A, 0.0f);
  const int64_t dval_from = a.dcontext ? len : 0;
  fill(a.dvalues + (b * Lk + dval_from) * Dv, (Lk - dval_from) * Dv, 0.0f);
  float dot = 0.0f;
  // c = sum_j a_j h_j  =>  da_j = dc . h_j (+ the weights' own gradient),  dh_j = a_j dc
  for (int64_t j = 0; j < len; ++j) {
    float g = a.dweights ? a.dweights[b * Lk + j] : 0.0f;
    if (a.dcontext) {
      const float* h = a.values + (b * Lk + j) * Dv;
      const float* dc = a.dcontext + b * Dv;
      float* dh = a.dvalues + (b * Lk + j) * Dv;
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
    detail::score_row_backward(a.qp + b * A, a.kp + (b * Lk + j) * A, a.v, de, A, a.dkp + (b * Lk + j) * A, false,
                               a.dqp + b * A, a.dv_rows + b * A);
  }
}

}  // namespace

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
bool project_query(int64_t B, int64_t Qd, int64_t A, const float* query, const float* W1, float* qp,
                   const KernelScratch& scratch) {
  constexpr int64_t W = simd::kLanes, kMaxTileRows = 128;
  if (B < W || B > kMaxTileRows) return false;
  const int64_t Bp = (B + W - 1) / W * W;
  constexpr int64_t kRows = 64;  // rows of a transpose or of the product per work item
  // query^T [Qd, Bp], then qp^T [A, Bp] from a 64-byte boundary
  const int64_t ct_at = (Qd * Bp + 15) / 16 * 16;
  float* pqt = scratch.get(scratch.ctx, ct_at + A * Bp);
  float* pct = pqt + ct_at;
#pragma omp parallel if (B * A * Qd > kParallelGrain)
  {
#pragma omp for schedule(static)
    for (int64_t k0 = 0; k0 < Qd; k0 += kRows) {
      const int64_t nk = min_i(kRows, Qd - k0);
      detail::transpose_scaled(query + k0, Qd, pqt + k0 * Bp, Bp, nk, B, 1.0f);
      if (Bp > B)
        for (int64_t k = k0; k < k0 + nk; ++k) fill(pqt + k * Bp + B, Bp - B, 0.0f);
    }
#pragma omp for schedule(static)
    for (int64_t a0 = 0; a0 < A; a0 += kRows)
      detail::tile_gemm(min_i(kRows, A - a0), Bp, Qd, W1 + a0 * Qd, Qd, 1, pqt, Bp, pct + a0 * Bp, Bp, false);
#pragma omp for schedule(static)
    for (int64_t b0 = 0; b0 < B; b0 += kRows)
      detail::transpose_scaled(pct + b0, Bp, qp + b0 * A, A, min_i(kRows, B - b0), A, 1.0f);
  }
  return true;
}

void forward(const Forward& a) {
  const int64_t B = a.B, Lk = a.Lk, A = a.A, Dv = a.Dv;
  const bool par = B > 1 && B * Lk * (A + Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = a.lengths ? int64_t(a.lengths[b]) : Lk;
    // e_j = v^T tanh(W1 s + U h_j); a = softmax over j < len; c = sum_j a_j h_j
    const bool more = b + 1 < B;  // the next row's keys are fetched during this row's context sum
    detail::attend_row(a.qp + b * A, a.kp + b * Lk * A, a.v, A, a.values + b * Lk * Dv, Dv, len, Lk, a.weights + b * Lk,
                       a.context + b * Dv, more ? a.kp + (b + 1) * Lk * A : nullptr,
                       more ? (a.lengths ? int64_t(a.lengths[b + 1]) : Lk) * A : 0);
    // the scores again, for inspection only: score_row is what attend_row ran, so they are the same floats
    if (a.scores)
      for (int64_t j = 0; j < Lk; ++j)
        a.scores[b * Lk + j] = j < len ? detail::score_row(a.qp + b * A, a.kp + (b * Lk + j) * A, a.v, A) : -__builtin_inff();
  }
}

void backward(const Backward& a) {
  const bool par = a.B > 1 && a.B * a.Lk * (a.A + a.Dv) > kParallelGrain;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t b = 0; b < a.B; ++b) backward_row(a, b);
}

}  // namespace attn::attention::additive_step_kernels::ATTN_SIMD_ISA
