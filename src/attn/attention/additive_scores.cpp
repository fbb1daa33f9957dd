// The additive score v^T tanh(qa_i + ka_j) for all query/key pairs as one op
// ("additive_scores"): the composed version (broadcast add, tanh, matmul) keeps
// two [B, H, Lq, Lk, A] tensors for its backward; this one keeps none and
// recomputes the tanh. The glue (checks, tensors, autograd) around the kernels
// of kernels/additive_scores.h (compiled per instruction set).
#include <stdexcept>

#include "attn/attention/checks.h"
#include "attn/kernels/additive_scores.h"
#include "attn/tensor/kernels.h"

namespace attn::attention {

Tensor fused_additive_scores(const Tensor& qa, const Tensor& ka, const Tensor& v) {
  bool ok = qa.defined() && ka.defined() && v.defined() && qa.dim() == 4 && ka.dim() == 4 && v.dim() == 1 &&
            qa.size(0) == ka.size(0) && qa.size(1) == ka.size(1) && qa.size(3) == v.size(0) && ka.size(3) == v.size(0);
  if (!ok)
    throw std::invalid_argument("fused_additive_scores: qa " + shape_str(qa) + ", ka " + shape_str(ka) + ", v " +
                                shape_str(v) + " (expects qa [B, H, Lq, A], ka [B, H, Lk, A], v [A])");
  const int64_t B = qa.size(0), H = qa.size(1), Lq = qa.size(2), Lk = ka.size(2), A = v.size(0), BH = B * H;
  Tensor e = Tensor::empty({B, H, Lq, Lk});
  const additive_scores_kernels::Scores sc{BH, Lq, Lk, A, qa.data(), ka.data(), v.data()};
  additive_scores_kernels::forward(sc, e.data());
  autograd::record(
      "additive_scores", {qa, ka, v}, e,
      [qa = qa.detach(), ka = ka.detach(), v = v.detach(), Lq, Lk, A,
       BH](const std::vector<Tensor>& d) -> std::vector<Tensor> {
        Tensor dqa = Tensor::zeros(qa.shape()), dka = Tensor::zeros(ka.shape()), dv_rows = Tensor::zeros({BH, A});
        const additive_scores_kernels::Scores sc{BH, Lq, Lk, A, qa.data(), ka.data(), v.data()};
        additive_scores_kernels::backward(sc, d[0].data(), dqa.data(), dka.data(), dv_rows.data());
        return {dqa, dka, kernels::sum_axis(dv_rows, 0, false)};
      });
  return e;
}

}  // namespace attn::attention
