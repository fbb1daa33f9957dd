// The fused additive score op's kernels (see kernels/additive_scores.h): the
// rows of kernels/additive_math.h over every query/key pair. An ISA source
// (kernels/dispatch.h): compiled once per instruction set, raw pointers only.
#include "attn/kernels/additive_scores.h"

#include "attn/cpu/threading.h"  // kParallelGrain
#include "attn/kernels/additive_math.h"

namespace attn::attention::additive_scores_kernels::ATTN_SIMD_ISA {

void forward(const Scores& s, float* e) {
  const int64_t Lq = s.Lq, Lk = s.Lk, A = s.A, rows = s.BH * Lq;
  // e_ij = v^T tanh(qa_i + ka_j)
#pragma omp parallel for schedule(static) if (rows * Lk * A > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t bh = r / Lq;
    for (int64_t j = 0; j < Lk; ++j) e[r * Lk + j] = detail::score_row(s.qa + r * A, s.ka + (bh * Lk + j) * A, s.v, A);
  }
}

void backward(const Scores& s, const float* de, float* dqa, float* dka, float* dv_rows) {
  const int64_t BH = s.BH, Lq = s.Lq, Lk = s.Lk, A = s.A;
  // one (b, h) per thread: its dka rows gather over all its queries without races
#pragma omp parallel for schedule(dynamic) if (BH > 1 && BH * Lq * Lk * A > kParallelGrain)
  for (int64_t bh = 0; bh < BH; ++bh)
    for (int64_t i = 0; i < Lq; ++i) {
      const int64_t r = bh * Lq + i;
      for (int64_t j = 0; j < Lk; ++j) {
        const float d = de[r * Lk + j];
        if (d == 0.0f) continue;  // hidden keys (softmax gives them zero gradient): nothing to add
        // e = v^T tanh(z), z = qa_i + ka_j  =>  dqa_i += dz, dka_j += dz, dv += de tanh z
        detail::score_row_backward(s.qa + r * A, s.ka + (bh * Lk + j) * A, s.v, d, A, dka + (bh * Lk + j) * A, true,
                                   dqa + r * A, dv_rows + bh * A);
      }
    }
}

}  // namespace attn::attention::additive_scores_kernels::ATTN_SIMD_ISA
