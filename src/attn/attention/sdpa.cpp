// The fused scaled dot-product attention as a differentiable op ("sdpa_fused").
#include <stdexcept>

#include "attn/attention/checks.h"
#include "attn/attention/flash.h"

namespace attn::attention {

Tensor sdpa_fused(const Tensor& q, const Tensor& k, const Tensor& v, const FusedOptions& opt) {
  detail::check_qkv("sdpa_fused", q, k, v, true);
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), Lk = k.size(2), D = q.size(3), Dv = v.size(3);
  detail::check_mask("sdpa_fused", opt.mask, B, H, Lq, Lk);
  if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
    throw std::invalid_argument("sdpa_fused: dropout " + std::to_string(opt.dropout) + " outside [0, 1)");

  flash::Problem p;
  p.B = B, p.H = H, p.Lq = Lq, p.Lk = Lk, p.D = D, p.Dv = Dv;
  p.scale = opt.scale;
  p.q = q.data(), p.k = k.data(), p.v = v.data();
  Tensor lengths = opt.mask.key_lengths.defined() ? opt.mask.key_lengths.detach() : Tensor();
  Tensor keep = opt.mask.keep.defined() ? opt.mask.keep.detach() : Tensor();
  p.key_lengths = lengths.defined() ? lengths.data() : nullptr;
  p.causal = opt.mask.causal;
  if (keep.defined()) {
    const int64_t dims[4] = {B, H, Lq, Lk};
    int64_t st[4];
    detail::broadcast_strides4(keep, dims, st);
    p.mask = keep.data();
    p.mask_sb = st[0], p.mask_sh = st[1], p.mask_si = st[2], p.mask_sj = st[3];
  }
  p.dropout = opt.dropout;
  p.seed = opt.seed;

  Tensor out = Tensor::empty({B, H, Lq, Dv});
  Tensor lse = Tensor::empty({B, H, Lq});  // per-row log-sum-exp: all the backward keeps
  flash::forward(p, out.data(), lse.data());

  autograd::record("sdpa_fused", {q, k, v}, out,
                   [p, q = q.detach(), k = k.detach(), v = v.detach(), lengths, keep, out = out.detach(),
                    lse](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     flash::Problem pb = p;  // pointers into the tensors captured above
                     pb.q = q.data(), pb.k = k.data(), pb.v = v.data();
                     pb.key_lengths = lengths.defined() ? lengths.data() : nullptr;
                     pb.mask = keep.defined() ? keep.data() : nullptr;
                     Tensor dq = Tensor::empty(q.shape()), dk = Tensor::empty(k.shape()), dv = Tensor::empty(v.shape());
                     flash::backward(pb, out.data(), d[0].data(), lse.data(), dq.data(), dk.data(), dv.data());
                     return {dq, dk, dv};
                   });
  return out;
}

}  // namespace attn::attention
