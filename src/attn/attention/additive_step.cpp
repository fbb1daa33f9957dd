// The fused additive-attention decoder step: checks, tensors and autograd
// around the kernels of kernels/additive_step.h (compiled per instruction set).
#include "attn/attention/additive_step.h"

#include <stdexcept>

#include "attn/attention/checks.h"
#include "attn/kernels/additive_step.h"
#include "attn/tensor/kernels.h"

namespace attn::attention {
namespace {

// qp [B, A] = query [B, Qd] W1^T, W1 [A, Qd]: the kernel's register tile for the
// batches it suits (kernels/additive_step.cpp has the measurements), else BLAS.
Tensor project_query(const Tensor& query, const Tensor& W1) {
  const int64_t B = query.size(0), Qd = query.size(1), A = W1.size(0);
  Tensor qp = Tensor::empty({B, A}), scratch;
  if (!additive_step_kernels::project_query(B, Qd, A, query.data(), W1.data(), qp.data(),
                                            detail::pooled_scratch(scratch)))
    kernels::gemm(false, true, B, A, Qd, 1.0f, query.data(), Qd, W1.data(), Qd, 0.0f, qp.data(), A);
  return qp;
}

}  // namespace

Tensor project_keys(const Tensor& keys, const Tensor& W2, const Tensor& bias) {
  if (!keys.defined() || keys.dim() != 3)
    throw std::invalid_argument("project_keys: keys " + shape_str(keys) + " (expects [B, Lk, Dk])");
  return linear(keys, W2, bias);
}

AdditiveStepOutput additive_step(const Tensor& query, const Tensor& keys_proj, const Tensor& values, const Tensor& W1,
                                 const Tensor& v, const Tensor& key_lengths, bool need_scores) {
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
  additive_step_kernels::Forward f;
  f.B = B, f.Lk = Lk, f.A = A, f.Dv = Dv;
  f.qp = qp.data(), f.kp = keys_proj.data(), f.values = values.data(), f.v = v.data();
  f.lengths = key_lengths.defined() ? key_lengths.data() : nullptr;
  f.weights = w.data(), f.context = ctx.data();
  Tensor scores = need_scores ? Tensor::empty({B, Lk}) : Tensor();
  f.scores = need_scores ? scores.data() : nullptr;
  additive_step_kernels::forward(f);

  AdditiveStepOutput out{ctx, w, scores};
  autograd::record(
      "additive_step", {query, keys_proj, values, W1, v}, {&out.context, &out.weights},
      [query = query.detach(), kp = keys_proj.detach(), values = values.detach(), W1 = W1.detach(), v = v.detach(),
       lengths = key_lengths.defined() ? key_lengths.detach() : Tensor(), qp, w = w.detach(), B, Qd, Lk, A, Dv,
       gq = query.requires_grad(), gw1 = W1.requires_grad()](const std::vector<Tensor>& d) -> std::vector<Tensor> {
        // rows j < length of dkp and dval are written by the kernel, the rest zeroed there
        Tensor dkp = Tensor::empty(kp.shape()), dval = Tensor::empty(values.shape());
        Tensor dqp = Tensor::zeros({B, A}), dv_rows = Tensor::zeros({B, A}), da_all = Tensor::empty({B, Lk});
        additive_step_kernels::Backward g;
        g.B = B, g.Lk = Lk, g.A = A, g.Dv = Dv;
        g.qp = qp.data(), g.kp = kp.data(), g.values = values.data(), g.v = v.data();
        g.lengths = lengths.defined() ? lengths.data() : nullptr, g.weights = w.data();
        g.dcontext = d[0].defined() ? d[0].data() : nullptr;  // [B, Dv]
        g.dweights = d[1].defined() ? d[1].data() : nullptr;  // [B, Lk]
        g.dkp = dkp.data(), g.dvalues = dval.data(), g.dqp = dqp.data(), g.dv_rows = dv_rows.data();
        g.da = da_all.data();
        additive_step_kernels::backward(g);
        const float* pdqp = dqp.data();
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
