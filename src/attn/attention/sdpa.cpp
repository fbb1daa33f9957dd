// The fused scaled dot-product attention as a differentiable op ("sdpa_fused").
#include <stdexcept>
#include <string>

#include "attn/attention/checks.h"
#include "attn/attention/flash.h"

namespace attn::attention {

namespace {

// The mask and dropout part of the problem (sizes set by the caller); the
// returned tensors keep the mask data alive for the backward.
void set_mask(const char* fn, flash::Problem& p, const FusedOptions& opt, Tensor& lengths, Tensor& keep) {
  detail::check_mask(fn, opt.mask, p.B, p.H, p.Lq, p.Lk);
  if (!(opt.dropout >= 0.0f && opt.dropout < 1.0f))
    throw std::invalid_argument(std::string(fn) + ": dropout " + std::to_string(opt.dropout) + " outside [0, 1)");
  p.scale = opt.scale;
  lengths = opt.mask.key_lengths.defined() ? opt.mask.key_lengths.detach() : Tensor();
  keep = opt.mask.keep.defined() ? opt.mask.keep.detach() : Tensor();
  p.key_lengths = lengths.defined() ? lengths.data() : nullptr;
  p.causal = opt.mask.causal;
  if (keep.defined()) {
    const int64_t dims[4] = {p.B, p.H, p.Lq, p.Lk};
    int64_t st[4];
    detail::broadcast_strides4(keep, dims, st);
    p.mask = keep.data();
    p.mask_sb = st[0], p.mask_sh = st[1], p.mask_si = st[2], p.mask_sj = st[3];
  }
  p.dropout = opt.dropout;
  p.seed = opt.seed;
}

}  // namespace

Tensor sdpa_fused(const Tensor& q, const Tensor& k, const Tensor& v, const FusedOptions& opt) {
  detail::check_qkv("sdpa_fused", q, k, v, true);
  flash::Problem p;
  p.B = q.size(0), p.H = q.size(1), p.Lq = q.size(2), p.Lk = k.size(2), p.D = q.size(3), p.Dv = v.size(3);
  flash::set_contiguous(p);
  Tensor lengths, keep;
  set_mask("sdpa_fused", p, opt, lengths, keep);
  p.q = q.data(), p.k = k.data(), p.v = v.data();

  Tensor out = Tensor::empty({p.B, p.H, p.Lq, p.Dv});
  Tensor lse = Tensor::empty({p.B, p.H, p.Lq});  // per-row log-sum-exp: all the backward keeps
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

Tensor sdpa_fused_packed(const Tensor& qkv, int64_t heads, const FusedOptions& opt) {
  if (!qkv.defined() || qkv.dim() != 3 || heads <= 0 || qkv.size(2) % (3 * heads) != 0)
    throw std::invalid_argument("sdpa_fused_packed: qkv " + shape_str(qkv) + " with " + std::to_string(heads) +
                                " heads (expects [B, L, 3 H D])");
  const int64_t B = qkv.size(0), L = qkv.size(1), E = qkv.size(2) / 3, D = E / heads;
  flash::Problem p;
  p.B = B, p.H = heads, p.Lq = L, p.Lk = L, p.D = D, p.Dv = D;
  // (b, h, i, d) of q at qkv[b][i][h * D + d], of k at E further, of v at 2 E further
  p.lq = p.lk = p.lv = {L * 3 * E, D, 3 * E};
  p.lo = {L * E, D, E};  // context [B, L, H, D]
  Tensor lengths, keep;
  set_mask("sdpa_fused_packed", p, opt, lengths, keep);
  p.q = qkv.data(), p.k = qkv.data() + E, p.v = qkv.data() + 2 * E;

  Tensor out = Tensor::empty({B, L, E});
  Tensor lse = Tensor::empty({B, heads, L});
  flash::forward(p, out.data(), lse.data());

  autograd::record("sdpa_fused_packed", {qkv}, out,
                   [p, qkv = qkv.detach(), lengths, keep, out = out.detach(), lse,
                    E](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     flash::Problem pb = p;
                     pb.q = qkv.data(), pb.k = qkv.data() + E, pb.v = qkv.data() + 2 * E;
                     pb.key_lengths = lengths.defined() ? lengths.data() : nullptr;
                     pb.mask = keep.defined() ? keep.data() : nullptr;
                     // dq, dk, dv are the three column blocks of one [B, L, 3E] gradient
                     Tensor dqkv = Tensor::empty(qkv.shape());
                     flash::backward(pb, out.data(), d[0].data(), lse.data(), dqkv.data(), dqkv.data() + E,
                                     dqkv.data() + 2 * E);
                     return {dqkv};
                   });
  return out;
}

Tensor sdpa_fused_cross(const Tensor& q, const Tensor& kv, int64_t heads, const FusedOptions& opt) {
  if (!q.defined() || !kv.defined() || q.dim() != 3 || kv.dim() != 3 || heads <= 0 || q.size(2) % heads != 0 ||
      kv.size(2) != 2 * q.size(2) || kv.size(0) != q.size(0))
    throw std::invalid_argument("sdpa_fused_cross: q " + shape_str(q) + ", kv " + shape_str(kv) + " with " +
                                std::to_string(heads) + " heads (expects [B, Lq, H D] and [B, Lk, 2 H D])");
  const int64_t B = q.size(0), Lq = q.size(1), Lk = kv.size(1), E = q.size(2), D = E / heads;
  flash::Problem p;
  p.B = B, p.H = heads, p.Lq = Lq, p.Lk = Lk, p.D = D, p.Dv = D;
  // (b, h, i, d) of q at q[b][i][h * D + d]; of k at kv[b][j][h * D + d], of v E further
  p.lq = {Lq * E, D, E};
  p.lk = p.lv = {Lk * 2 * E, D, 2 * E};
  p.lo = {Lq * E, D, E};  // context [B, Lq, H, D]
  Tensor lengths, keep;
  set_mask("sdpa_fused_cross", p, opt, lengths, keep);
  p.q = q.data(), p.k = kv.data(), p.v = kv.data() + E;

  Tensor out = Tensor::empty({B, Lq, E});
  Tensor lse = Tensor::empty({B, heads, Lq});
  flash::forward(p, out.data(), lse.data());

  autograd::record("sdpa_fused_cross", {q, kv}, out,
                   [p, q = q.detach(), kv = kv.detach(), lengths, keep, out = out.detach(), lse,
                    E](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     flash::Problem pb = p;
                     pb.q = q.data(), pb.k = kv.data(), pb.v = kv.data() + E;
                     pb.key_lengths = lengths.defined() ? lengths.data() : nullptr;
                     pb.mask = keep.defined() ? keep.data() : nullptr;
                     // dk and dv are the two column blocks of one [B, Lk, 2E] gradient
                     Tensor dq = Tensor::empty(q.shape()), dkv = Tensor::empty(kv.shape());
                     flash::backward(pb, out.data(), d[0].data(), lse.data(), dq.data(), dkv.data(), dkv.data() + E);
                     return {dq, dkv};
                   });
  return out;
}

}  // namespace attn::attention
