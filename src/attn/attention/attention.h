// Attention, functional API: score a query against keys, turn the scores into
// weights with a masked softmax, and take the weighted sum of the values.
//
// Legend (every function in this folder):
//   B batch, H heads, Lq query length, Lk key length, D query size,
//   Dk key size (= D for dot-style scores), Dv value size, A attention size of
//   the additive scores.
//   q [B, H, Lq, D]   k [B, H, Lk, Dk]   v [B, H, Lk, Dv]
//   scores, weights [B, H, Lq, Lk]       context [B, H, Lq, Dv]
// A model without heads passes H = 1 (reshape [B, L, D] -> [B, 1, L, D] is free).
// Everything is differentiable through the tape (attn/autograd).
//
//   weights = softmax_j(score(q_i, k_j))   over the keys visible to query i
//   context_i = sum_j weights_ij v_j
//
// Scores (Luong et al. 2015, "Effective Approaches to Attention-based NMT", eq. 8;
// Bahdanau et al. 2015; Vaswani et al. 2017):
//   Dot        q . k
//   ScaledDot  q . k / sqrt(D)              (or a given scale)
//   General    q^T W k                      W [D, Dk]
//   Additive   v^T tanh(W1 q + W2 k + b)    W1 [A, D], W2 [A, Dk], v [A], b [A] optional
//   Concat     v^T tanh(Wa [q; k])          Wa [A, D + Dk], v [A]  (Luong's concat)
//
// Dot, ScaledDot and General (as (q W) . k) without returned weights (and, with
// Kernel::Auto, at least 16 queries) run the fused kernel (flash.h), which never
// stores the [Lq, Lk] matrix; everything else runs the materialising path
// (scores -> masked softmax -> dropout -> weights @ v). Additive and Concat
// scores go through one fused op that keeps nothing of size Lq Lk A; the
// decoder-step form with cached key projections is additive_step.h.
#pragma once
#include <cstdint>
#include <optional>
#include <utility>
#include <variant>

#include "attn/autograd/ops.h"
#include "attn/tensor/random.h"
#include "attn/tensor/tensor.h"

namespace attn::attention {

// ---- scores ----
struct Dot {};
struct ScaledDot {
  std::optional<float> scale;  // default 1/sqrt(D)
};
struct General {
  Tensor W;  // [D, Dk]
};
struct Additive {
  Tensor W1;    // [A, D]  applied to the query
  Tensor W2;    // [A, Dk] applied to the key
  Tensor v;     // [A]
  Tensor bias;  // [A] or undefined (none)
};
struct Concat {
  Tensor Wa;  // [A, D + Dk], columns [0, D) see the query, [D, D + Dk) the key
  Tensor v;   // [A]
};
using Score = std::variant<Dot, ScaledDot, General, Additive, Concat>;

// q [B, H, Lq, D], k [B, H, Lk, Dk] -> scores [B, H, Lq, Lk]
Tensor dot_scores(const Tensor& q, const Tensor& k);
Tensor scaled_dot_scores(const Tensor& q, const Tensor& k, std::optional<float> scale = {});
Tensor general_scores(const Tensor& q, const Tensor& k, const Tensor& W);
// The projections are linear ops, the rest fused_additive_scores; for one decoder
// step with cached key projections use additive_step.h.
Tensor additive_scores(const Tensor& q, const Tensor& k, const Additive& p);
Tensor concat_scores(const Tensor& q, const Tensor& k, const Concat& p);
// The tanh part of the additive score as one op ("additive_scores"):
// qa [B, H, Lq, A] (W1 q + b), ka [B, H, Lk, A] (W2 k), v [A] -> v^T tanh(qa_i + ka_j)
// [B, H, Lq, Lk]. Keeps nothing of size Lq Lk A for the backward (recomputes the tanh).
Tensor fused_additive_scores(const Tensor& qa, const Tensor& ka, const Tensor& v);
Tensor scores(const Tensor& q, const Tensor& k, const Score& score);

// ---- which keys a query sees ----
// The parts combine: a key is visible when every part allows it.
struct Mask {
  Tensor key_lengths;  // [B] float-encoded counts in [0, Lk]: keys j >= length are padding. Undefined: none
  bool causal = false;  // query i sees keys j <= i (top-left aligned, as PyTorch's is_causal)
  Tensor keep;          // 0/1, broadcastable to [B, H, Lq, Lk]; 0 hides the key. Undefined: none
  bool empty() const { return !key_lengths.defined() && !causal && !keep.defined(); }
};

// The mask as one 0/1 tensor [B, 1 or H, Lq, Lk] (H when `keep` has a head axis);
// undefined when the mask is empty. Throws on shapes that do not fit.
Tensor mask_tensor(const Mask& mask, int64_t B, int64_t H, int64_t Lq, int64_t Lk);

// ---- Luong's local attention ----
enum class Window {
  Global,           // every key (default)
  LocalMonotonic,   // local-m: keys within half_width of p_i = i + position_offset
  LocalPredictive,  // local-p: p_i = S sigmoid(vp^T tanh(Wp q_i)), S = key length, and the
                    // weights are multiplied by exp(-(j - p_i)^2 / (2 sigma^2)), sigma = half_width / 2
};
struct LocalOptions {
  Window window = Window::Global;
  int64_t half_width = 10;      // D of Luong et al.: the window is [p - D, p + D]
  int64_t position_offset = 0;  // local-m: target position of query 0 (step-by-step decoding)
  Tensor Wp;                    // local-p: [A, D]
  Tensor vp;                    // local-p: [A]
};
// local-p's predicted positions: q [B, H, Lq, D] -> [B, H, Lq], in (0, S_b)
// with S_b = key_lengths[b] (or Lk). Differentiable in q, Wp, vp.
Tensor predicted_positions(const Tensor& q, const Tensor& Wp, const Tensor& vp, const Tensor& key_lengths, int64_t Lk);

// ---- options and result ----
constexpr int64_t kFusedMinQueries = 16;  // Kernel::Auto: fewer queries than this stay materialised
enum class Kernel {
  Auto,          // fused when the score is Dot/ScaledDot/General, the window global, no weights requested
                 // and Lq >= 16 (a decoder step with a few queries is cheaper materialised)
  Fused,         // require the fused kernel (throws when the call needs weights or another score)
  Materialized,  // always scores -> softmax -> weights @ v
};

struct AttentionOptions {
  Mask mask;                  // default: every key visible
  float dropout = 0.0f;       // probability of zeroing a weight (rest scaled by 1/(1-p)); training only
  bool training = false;      // dropout is active only when training
  Rng* rng = nullptr;         // draws the dropout seed; required when dropout is active
  bool need_weights = false;  // return the [B, H, Lq, Lk] weights (before dropout): forces the
                              // materialising path; the weights are differentiable
  bool need_scores = false;   // also return the scores before the softmax and the local window's
                              // range and positions (AttentionOutput): forces the materialising
                              // path; for inspection (attn explain), not differentiable
  Kernel kernel = Kernel::Auto;
  LocalOptions local;         // default: global attention
};

struct AttentionOutput {
  Tensor context;    // [B, H, Lq, Dv]
  Tensor weights;    // [B, H, Lq, Lk] when need_weights, else undefined
  // When need_scores (else undefined), detached from the tape:
  Tensor scores;     // [B, H, Lq, Lk] the scores the softmax reads, -inf where the mask or window hides the key
  Tensor window;     // [B, H, Lq, 2] local windows: the visible keys [lo, hi) (float-encoded; lo == hi when
                     // none), the window clipped to [0, key length); undefined for global attention
  Tensor positions;  // [B, H, Lq] local-p's predicted positions p, else undefined
};

// The keys of a local window around position p: [lo, hi) = the integers j with
// |j - p| <= half_width, clipped to [0, Lk) (lo == hi when none). The one rule
// the window masks are built from.
std::pair<int64_t, int64_t> window_range(double p, int64_t half_width, int64_t Lk);

// q [B, H, Lq, D], k [B, H, Lk, Dk], v [B, H, Lk, Dv] -> context [B, H, Lq, Dv] (+ weights)
AttentionOutput attention(const Tensor& q, const Tensor& k, const Tensor& v, const Score& score,
                          const AttentionOptions& opt = {});
inline AttentionOutput scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                                    const AttentionOptions& opt = {}) {
  return attention(q, k, v, ScaledDot{}, opt);
}

// From given scores: scores [B, H, Lq, Lk], v [B, H, Lk, Dv] -> context (+ weights).
// Local-p needs the positions: positions [B, H, Lq] from predicted_positions().
AttentionOutput attend(const Tensor& scores, const Tensor& v, const AttentionOptions& opt = {},
                       const Tensor& positions = Tensor());

// ---- the fused kernel as a differentiable op ("sdpa_fused") ----
struct FusedOptions {
  Mask mask;
  float scale = 1.0f;     // multiplies q . k (scaled_dot_product_attention passes 1/sqrt(D))
  float dropout = 0.0f;   // active when > 0 (the caller decides about training mode)
  uint64_t seed = 0;      // dropout pattern, see dropout_keep_mask
};
// q [B, H, Lq, D], k [B, H, Lk, D], v [B, H, Lk, Dv] -> [B, H, Lq, Dv]. Saves only
// the per-row log-sum-exp [B, H, Lq] for the backward.
Tensor sdpa_fused(const Tensor& q, const Tensor& k, const Tensor& v, const FusedOptions& opt);
// Self-attention on a packed projection ("sdpa_fused_packed"): qkv [B, L, 3 H D]
// whose columns are the H heads of q, then of k, then of v (each head D wide, the
// layout of MultiHeadAttention's in_proj output) -> context [B, L, H D] (heads
// concatenated). The same kernel as sdpa_fused reading and writing through
// strides: no permute in either direction; the gradient is one [B, L, 3 H D] tensor.
Tensor sdpa_fused_packed(const Tensor& qkv, int64_t heads, const FusedOptions& opt);
// Cross-attention on packed projections ("sdpa_fused_cross"): q [B, Lq, H D] (the
// heads side by side, MultiHeadAttention's query projection) and kv [B, Lk, 2 H D]
// (the H heads of k, then of v: its key and value projections as one GEMM) ->
// context [B, Lq, H D]. Read and written through strides like sdpa_fused_packed;
// the gradients are one [B, Lq, H D] and one [B, Lk, 2 H D] tensor.
Tensor sdpa_fused_cross(const Tensor& q, const Tensor& kv, int64_t heads, const FusedOptions& opt);

// The dropout pattern the fused kernel uses for `seed`: [B, H, Lq, Lk] with 0 for
// a dropped weight and 1/(1-p) for a kept one (the materialising path multiplies
// by it, so both paths drop the same weights).
Tensor dropout_keep_mask(uint64_t seed, float p, int64_t B, int64_t H, int64_t Lq, int64_t Lk);

}  // namespace attn::attention
