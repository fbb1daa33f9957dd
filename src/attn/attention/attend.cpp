// attention(): dispatch between the fused kernel and the materialising path;
// attend(): masked softmax (global or Luong's local window), dropout, context.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attn/attention/checks.h"
#include "attn/tensor/kernels.h"

namespace attn::attention {
namespace {

bool dropout_active(const AttentionOptions& o) { return o.training && o.dropout > 0.0f; }

void check_dropout(const char* fn, const AttentionOptions& o) {
  if (!(o.dropout >= 0.0f && o.dropout < 1.0f))
    throw std::invalid_argument(std::string(fn) + ": dropout " + std::to_string(o.dropout) + " outside [0, 1)");
  if (dropout_active(o) && !o.rng)
    throw std::invalid_argument(std::string(fn) + ": dropout is active (training, p > 0) but no rng was given");
}

// 0/1 [1, 1, Lq, Lk]: local-m's window around p_i = i + offset
Tensor monotonic_window(int64_t Lq, int64_t Lk, int64_t offset, int64_t half_width) {
  Tensor w = Tensor::zeros({1, 1, Lq, Lk});
  for (int64_t i = 0; i < Lq; ++i) {
    const auto [lo, hi] = window_range(double(i + offset), half_width, Lk);
    for (int64_t j = lo; j < hi; ++j) w.data()[i * Lk + j] = 1.0f;
  }
  return w;
}

// 0/1 [B, H, Lq, Lk]: local-p's window around real positions p [B, H, Lq]
Tensor predictive_window(const Tensor& pos, int64_t Lk, int64_t half_width) {
  const int64_t rows = pos.numel();
  Tensor w = Tensor::zeros({pos.size(0), pos.size(1), pos.size(2), Lk});
  for (int64_t r = 0; r < rows; ++r) {
    const auto [lo, hi] = window_range(double(pos.data()[r]), half_width, Lk);
    for (int64_t j = lo; j < hi; ++j) w.data()[r * Lk + j] = 1.0f;
  }
  return w;
}

// need_scores' outputs: the scores with -inf where `mask` [B, 1 or H, Lq, Lk]
// (or undefined: all visible) hides a key, and for a local window each row's
// visible range [lo, hi) (the window is one run of keys, so the first and last
// visible key bound it)
void inspect(const Tensor& sc, const Tensor& mask, bool local, AttentionOutput& out) {
  const int64_t B = sc.size(0), H = sc.size(1), Lq = sc.size(2), Lk = sc.size(3);
  const int64_t Bm = mask.defined() ? mask.size(0) : 1, Hm = mask.defined() ? mask.size(1) : 1;  // broadcast axes
  out.scores = Tensor::empty(sc.shape());
  if (local) out.window = Tensor::empty({B, H, Lq, 2});
  const float* s = sc.data();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t row = (b * H + h) * Lq + i;
        const int64_t mrow = ((Bm == 1 ? 0 : b) * Hm + (Hm == 1 ? 0 : h)) * Lq + i;
        const float* m = mask.defined() ? mask.data() + mrow * Lk : nullptr;
        int64_t lo = -1, hi = -1;
        for (int64_t j = 0; j < Lk; ++j) {
          const bool vis = !m || m[j] != 0.0f;
          out.scores.data()[row * Lk + j] = vis ? s[row * Lk + j] : -std::numeric_limits<float>::infinity();
          if (vis && lo < 0) lo = j;
          if (vis) hi = j + 1;
        }
        if (local) {
          out.window.data()[row * 2] = float(lo < 0 ? 0 : lo);
          out.window.data()[row * 2 + 1] = float(lo < 0 ? 0 : hi);
        }
      }
}

Tensor combine(const Tensor& a, const Tensor& b) { return a.defined() ? kernels::mul(a, b) : b; }

}  // namespace

std::pair<int64_t, int64_t> window_range(double p, int64_t half_width, int64_t Lk) {
  const int64_t lo = std::max<int64_t>(0, int64_t(std::ceil(p - double(half_width))));
  const int64_t hi = std::min<int64_t>(Lk, int64_t(std::floor(p + double(half_width))) + 1);
  return {std::min(lo, Lk), std::max(std::min(lo, Lk), hi)};
}

Tensor predicted_positions(const Tensor& q, const Tensor& Wp, const Tensor& vp, const Tensor& key_lengths, int64_t Lk) {
  if (!q.defined() || q.dim() != 4 || !Wp.defined() || !vp.defined() || Wp.dim() != 2 || vp.dim() != 1 ||
      Wp.size(1) != q.size(3) || Wp.size(0) != vp.size(0))
    throw std::invalid_argument("predicted_positions: q " + shape_str(q) + ", Wp " + shape_str(Wp) + ", vp " +
                                shape_str(vp) + " (expects q [B, H, Lq, D], Wp [A, D], vp [A])");
  const int64_t B = q.size(0), H = q.size(1), Lq = q.size(2), A = vp.size(0);
  Mask m;
  m.key_lengths = key_lengths;
  detail::check_mask("predicted_positions", m, B, H, Lq, Lk);
  // S_b: the source length of each sentence
  Tensor S = Tensor::empty({B, 1, 1});
  for (int64_t b = 0; b < B; ++b) S.data()[b] = key_lengths.defined() ? key_lengths.data()[b] : float(Lk);
  // p = S sigmoid(vp^T tanh(Wp q))
  Tensor e = matmul(tanh(linear(q, Wp, Tensor())), reshape(vp, {A, 1}));  // [B, H, Lq, 1]
  return mul(reshape(sigmoid(e), {B, H, Lq}), S);
}

AttentionOutput attend(const Tensor& sc, const Tensor& v, const AttentionOptions& opt, const Tensor& positions) {
  if (!sc.defined() || !v.defined() || sc.dim() != 4 || v.dim() != 4 || sc.size(0) != v.size(0) ||
      sc.size(1) != v.size(1) || sc.size(3) != v.size(2))
    throw std::invalid_argument("attend: scores " + shape_str(sc) + " and v " + shape_str(v) +
                                " (expects scores [B, H, Lq, Lk], v [B, H, Lk, Dv])");
  check_dropout("attend", opt);
  const int64_t B = sc.size(0), H = sc.size(1), Lq = sc.size(2), Lk = sc.size(3);
  Tensor mask = mask_tensor(opt.mask, B, H, Lq, Lk);
  const LocalOptions& loc = opt.local;
  if (loc.window != Window::Global && loc.half_width < 0)
    throw std::invalid_argument("attend: local half_width " + std::to_string(loc.half_width) + " < 0");
  Tensor gauss;
  if (loc.window == Window::LocalMonotonic) {
    mask = combine(mask, monotonic_window(Lq, Lk, loc.position_offset, loc.half_width));
  } else if (loc.window == Window::LocalPredictive) {
    if (!positions.defined() || positions.shape() != Shape{B, H, Lq})
      throw std::invalid_argument("attend: local-p needs positions [B, H, Lq] = " + Shape{B, H, Lq}.str() + ", got " +
                                  shape_str(positions));
    mask = combine(mask, predictive_window(positions, Lk, loc.half_width));
    // exp(-(j - p)^2 / (2 sigma^2)), sigma = D / 2, differentiable in p
    Tensor j = Tensor::empty({1, 1, 1, Lk});
    for (int64_t i = 0; i < Lk; ++i) j.data()[i] = float(i);
    Tensor diff = sub(j, reshape(positions, {B, H, Lq, 1}));
    float sigma = 0.5f * float(loc.half_width > 0 ? loc.half_width : 1);
    gauss = exp(affine(mul(diff, diff), -1.0f / (2.0f * sigma * sigma)));
  }
  // a_ij = softmax over the visible keys (all-hidden rows give zeros)
  Tensor weights = softmax(sc, -1, mask);
  if (gauss.defined()) weights = mul(weights, gauss);
  Tensor used = weights;
  if (dropout_active(opt)) used = mul(weights, dropout_keep_mask(opt.rng->next_u64(), opt.dropout, B, H, Lq, Lk));
  // c_i = sum_j a_ij v_j
  Tensor context = matmul(used, v);
  AttentionOutput out{context, opt.need_weights ? weights : Tensor(), Tensor(), Tensor(), Tensor()};
  if (opt.need_scores) {
    inspect(sc.detach(), mask, loc.window != Window::Global, out);
    if (loc.window == Window::LocalPredictive) out.positions = positions.detach();
  }
  return out;
}

AttentionOutput attention(const Tensor& q, const Tensor& k, const Tensor& v, const Score& score,
                          const AttentionOptions& opt) {
  const bool dotlike = std::holds_alternative<Dot>(score) || std::holds_alternative<ScaledDot>(score);
  detail::check_qkv("attention", q, k, v, dotlike);
  detail::check_mask("attention", opt.mask, q.size(0), q.size(1), q.size(2), k.size(2));
  check_dropout("attention", opt);
  // Dot, ScaledDot and General are all (q') . k with q' = q or q W and a scale:
  // the fused kernel covers them when no weights are requested
  const bool dot_family = dotlike || std::holds_alternative<General>(score);
  const bool can_fuse = dot_family && opt.local.window == Window::Global && !opt.need_weights && !opt.need_scores;
  if (opt.kernel == Kernel::Fused && !can_fuse)
    throw std::invalid_argument(
        "attention: Kernel::Fused needs a Dot, ScaledDot or General score, a global window and need_weights = "
        "need_scores = false");
  // Auto keeps short query blocks (decoding one step at a time) on the
  // materialising path: the kernel's 64 query lanes would be mostly idle and the
  // [Lq, Lk] matrix is small anyway.
  const bool use_fused = opt.kernel == Kernel::Fused || (opt.kernel == Kernel::Auto && q.size(2) >= kFusedMinQueries);
  if (can_fuse && use_fused) {
    FusedOptions f;
    f.mask = opt.mask;
    Tensor qf = q;
    if (const auto* s = std::get_if<ScaledDot>(&score)) f.scale = s->scale ? *s->scale : 1.0f / std::sqrt(float(q.size(3)));
    if (const auto* g = std::get_if<General>(&score)) {
      if (!g->W.defined() || g->W.dim() != 2 || g->W.size(0) != q.size(3) || g->W.size(1) != k.size(3))
        throw std::invalid_argument("attention: General W " + shape_str(g->W) + " for q " + shape_str(q) + " and k " +
                                    shape_str(k) + " (expects W [D, Dk])");
      qf = matmul(q, g->W);  // q^T W k = (q W) . k
    }
    if (dropout_active(opt)) {
      f.dropout = opt.dropout;
      f.seed = opt.rng->next_u64();
    }
    return {sdpa_fused(qf, k, v, f), Tensor(), {}, {}, {}};
  }
  Tensor positions;
  if (opt.local.window == Window::LocalPredictive)
    positions = predicted_positions(q, opt.local.Wp, opt.local.vp, opt.mask.key_lengths, k.size(2));
  return attend(scores(q, k, score), v, opt, positions);
}

}  // namespace attn::attention
