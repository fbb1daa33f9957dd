// Score functions: q [B, H, Lq, D], k [B, H, Lk, Dk] -> [B, H, Lq, Lk], composed
// from differentiable ops (the tape holds their backward).
#include <cmath>
#include <stdexcept>

#include "attn/attention/checks.h"

namespace attn::attention {
namespace {
void check_qk(const char* fn, const Tensor& q, const Tensor& k, bool same_dim) {
  // v is not involved: check k against itself as the value
  detail::check_qkv(fn, q, k, k, same_dim);
}
}  // namespace

Tensor dot_scores(const Tensor& q, const Tensor& k) {
  check_qk("dot_scores", q, k, true);
  // e_ij = q_i . k_j
  return matmul(q, k, false, true);
}

Tensor scaled_dot_scores(const Tensor& q, const Tensor& k, std::optional<float> scale) {
  check_qk("scaled_dot_scores", q, k, true);
  // e_ij = q_i . k_j / sqrt(D)
  float sc = scale ? *scale : 1.0f / std::sqrt(float(q.size(3)));
  return affine(matmul(q, k, false, true), sc);
}

Tensor general_scores(const Tensor& q, const Tensor& k, const Tensor& W) {
  check_qk("general_scores", q, k, false);
  if (!W.defined() || W.dim() != 2 || W.size(0) != q.size(3) || W.size(1) != k.size(3))
    throw std::invalid_argument("general_scores: W " + shape_str(W) + " for q " + shape_str(q) + " and k " +
                                shape_str(k) + " (expects W [D, Dk])");
  // e_ij = q_i^T W k_j = (q W)_i . k_j
  return matmul(matmul(q, W), k, false, true);
}

Tensor additive_scores(const Tensor& q, const Tensor& k, const Additive& p) {
  check_qk("additive_scores", q, k, false);
  const int64_t A = p.v.defined() ? p.v.numel() : -1;
  bool ok = p.W1.defined() && p.W2.defined() && p.v.defined() && p.v.dim() == 1 && p.W1.dim() == 2 &&
            p.W2.dim() == 2 && p.W1.size(0) == A && p.W2.size(0) == A && p.W1.size(1) == q.size(3) &&
            p.W2.size(1) == k.size(3) && (!p.bias.defined() || (p.bias.dim() == 1 && p.bias.size(0) == A));
  if (!ok)
    throw std::invalid_argument("additive_scores: W1 " + shape_str(p.W1) + ", W2 " + shape_str(p.W2) + ", v " +
                                shape_str(p.v) + ", bias " + shape_str(p.bias) + " for q " + shape_str(q) + " and k " +
                                shape_str(k) + " (expects W1 [A, D], W2 [A, Dk], v [A], bias [A] or none)");
  // e_ij = v^T tanh(W1 q_i + W2 k_j + b)
  return fused_additive_scores(linear(q, p.W1, p.bias), linear(k, p.W2, Tensor()), p.v);
}

Tensor concat_scores(const Tensor& q, const Tensor& k, const Concat& p) {
  check_qk("concat_scores", q, k, false);
  const int64_t D = q.size(3), Dk = k.size(3);
  if (!p.Wa.defined() || !p.v.defined() || p.Wa.dim() != 2 || p.Wa.size(1) != D + Dk || p.v.dim() != 1 ||
      p.v.size(0) != p.Wa.size(0))
    throw std::invalid_argument("concat_scores: Wa " + shape_str(p.Wa) + ", v " + shape_str(p.v) + " for q " +
                                shape_str(q) + " and k " + shape_str(k) + " (expects Wa [A, D + Dk], v [A])");
  // e_ij = v^T tanh(Wa [q_i; k_j]) = v^T tanh(Wa[:, :D] q_i + Wa[:, D:] k_j): the
  // concatenation is never formed
  return additive_scores(q, k, Additive{slice(p.Wa, 1, 0, D), slice(p.Wa, 1, D, Dk), p.v, Tensor()});
}

Tensor scores(const Tensor& q, const Tensor& k, const Score& score) {
  struct Visitor {
    const Tensor &q, &k;
    Tensor operator()(const Dot&) const { return dot_scores(q, k); }
    Tensor operator()(const ScaledDot& s) const { return scaled_dot_scores(q, k, s.scale); }
    Tensor operator()(const General& g) const { return general_scores(q, k, g.W); }
    Tensor operator()(const Additive& a) const { return additive_scores(q, k, a); }
    Tensor operator()(const Concat& c) const { return concat_scores(q, k, c); }
  };
  return std::visit(Visitor{q, k}, score);
}

}  // namespace attn::attention
