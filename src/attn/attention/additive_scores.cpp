// The additive score v^T tanh(qa_i + ka_j) for all query/key pairs as one op
// ("additive_scores"): the composed version (broadcast add, tanh, matmul) keeps
// two [B, H, Lq, Lk, A] tensors for its backward; this one keeps none and
// recomputes the tanh.
#include <omp.h>

#include <algorithm>
#include <stdexcept>

#include "attn/attention/additive_kernels.h"
#include "attn/attention/checks.h"
#include "attn/tensor/kernels.h"
#include "attn/tensor/threading.h"

namespace attn::attention {

Tensor fused_additive_scores(const Tensor& qa, const Tensor& ka, const Tensor& v) {
  bool ok = qa.defined() && ka.defined() && v.defined() && qa.dim() == 4 && ka.dim() == 4 && v.dim() == 1 &&
            qa.size(0) == ka.size(0) && qa.size(1) == ka.size(1) && qa.size(3) == v.size(0) && ka.size(3) == v.size(0);
  if (!ok)
    throw std::invalid_argument("fused_additive_scores: qa " + shape_str(qa) + ", ka " + shape_str(ka) + ", v " +
                                shape_str(v) + " (expects qa [B, H, Lq, A], ka [B, H, Lk, A], v [A])");
  const int64_t B = qa.size(0), H = qa.size(1), Lq = qa.size(2), Lk = ka.size(2), A = v.size(0), BH = B * H;
  Tensor e = Tensor::empty({B, H, Lq, Lk});
  const float *pq = qa.data(), *pk = ka.data(), *pv = v.data();
  float* pe = e.data();
  const int64_t rows = BH * Lq;
  // e_ij = v^T tanh(qa_i + ka_j)
#pragma omp parallel for schedule(static) if (rows * Lk * A > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t bh = r / Lq;
    for (int64_t j = 0; j < Lk; ++j) pe[r * Lk + j] = detail::score_row(pq + r * A, pk + (bh * Lk + j) * A, pv, A);
  }
  autograd::record(
      "additive_scores", {qa, ka, v}, e,
      [qa = qa.detach(), ka = ka.detach(), v = v.detach(), B, H, Lq, Lk, A,
       BH](const std::vector<Tensor>& d) -> std::vector<Tensor> {
        Tensor dqa = Tensor::zeros(qa.shape()), dka = Tensor::zeros(ka.shape()), dv_rows = Tensor::zeros({BH, A});
        const float *pq = qa.data(), *pk = ka.data(), *pv = v.data(), *pd = d[0].data();
        float *pdq = dqa.data(), *pdk = dka.data(), *pdv = dv_rows.data();
        // one (b, h) per thread: its dka rows gather over all its queries without races
#pragma omp parallel for schedule(dynamic) if (BH > 1 && BH * Lq * Lk * A > kParallelGrain)
        for (int64_t bh = 0; bh < BH; ++bh)
          for (int64_t i = 0; i < Lq; ++i) {
            const int64_t r = bh * Lq + i;
            for (int64_t j = 0; j < Lk; ++j) {
              const float de = pd[r * Lk + j];
              if (de == 0.0f) continue;  // hidden keys (softmax gives them zero gradient): nothing to add
              // e = v^T tanh(z), z = qa_i + ka_j  =>  dqa_i += dz, dka_j += dz, dv += de tanh z
              detail::score_row_backward(pq + r * A, pk + (bh * Lk + j) * A, pv, de, A, pdk + (bh * Lk + j) * A, true,
                                         pdq + r * A, pdv + bh * A);
            }
          }
        return {dqa, dka, kernels::sum_axis(dv_rows, 0, false)};
      });
  return e;
}

}  // namespace attn::attention
