// Attention as a layer with its own parameters: one score function of
// attn/attention/attention.h (dot, scaled dot, general, additive, concat), and
// optionally Luong's local window (local-m, or local-p with its position
// predictor), applied by attention::attention().
//
// Legend: B batch, H heads (1 for a single attention), Lq query length, Lk key
// length, D query size, Dk key size, Dv value size, A score hidden size.
//
// Other layers: MultiHeadAttention (multihead.h) for scaled-dot attention with
// Q/K/V/output projections over [B, L, E]; AdditiveAttention
// (additive_attention.h) for an RNN decoder step with cached key projections.
#pragma once
#include "attn/attention/attention.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::nn {

enum class ScoreKind {
  Dot,        // q . k                          (D == Dk)
  ScaledDot,  // q . k / sqrt(D)                (D == Dk)
  General,    // q^T W k                        W [D, Dk]
  Additive,   // v^T tanh(W1 q + W2 k + bias)   W1 [A, D], W2 [A, Dk], v [A], bias [A]
  Concat,     // v^T tanh(Wa [q; k])            Wa [A, D + Dk], v [A]
};

struct AttentionLayerOptions {
  AttentionLayerOptions(ScoreKind score, int64_t query_dim, int64_t key_dim)
      : score(score), query_dim(query_dim), key_dim(key_dim) {}
  ScoreKind score;
  int64_t query_dim;                                   // D
  int64_t key_dim;                                     // Dk
  int64_t attn_dim = 0;                                // A (additive, concat, local-p); 0: Dk
  bool additive_bias = true;                           // the additive score's bias
  attention::Window window = attention::Window::Global;
  int64_t half_width = 10;                             // local windows: [p - half_width, p + half_width]
  float dropout = 0.0f;                                // on the weights, training mode only
  attention::Kernel kernel = attention::Kernel::Auto;  // when no weights are requested
  AttentionLayerOptions& set_attn_dim(int64_t a) { attn_dim = a; return *this; }
  AttentionLayerOptions& set_additive_bias(bool b) { additive_bias = b; return *this; }
  AttentionLayerOptions& set_window(attention::Window w, int64_t half) { window = w, half_width = half; return *this; }
  AttentionLayerOptions& set_dropout(float p) { dropout = p; return *this; }
  AttentionLayerOptions& set_kernel(attention::Kernel k) { kernel = k; return *this; }
};

// The options a layer passes to attention::attention(): its mask, its dropout
// (active in training mode only), and the materialising kernel whenever the
// weights are asked for (the fused kernel never forms them). Shared by
// AttentionLayer and MultiHeadAttention.
attention::AttentionOptions layer_attention_options(const attention::Mask& mask, float dropout, bool training,
                                                    Rng* rng, bool need_weights, attention::Kernel kernel);

// Parameters (only those the score and window use are defined and registered):
// "W" [D, Dk]; "W1" [A, D], "W2" [A, Dk], "v" [A], "bias" [A]; "Wa" [A, D + Dk],
// "v" [A]; local-p "Wp" [A, D], "vp" [A]. Init U(+-1/sqrt(fan_in)), fan_in the
// width each weight multiplies (v, vp: A; bias: D).
class AttentionLayer : public Module {
public:
  AttentionLayer(const AttentionLayerOptions& opt, Rng& rng);

  // q [B, H, Lq, D], k [B, H, Lk, Dk], v [B, H, Lk, Dv] -> context [B, H, Lq, Dv],
  // and weights [B, H, Lq, Lk] when need_weights. position_offset: local-m's
  // aligned position of query 0 (a decoder step t passes t).
  attention::AttentionOutput forward(const Tensor& q, const Tensor& k, const Tensor& v,
                                     const attention::Mask& mask = {}, bool need_weights = false,
                                     int64_t position_offset = 0) const;
  // The score function with this layer's parameters.
  attention::Score score() const;

  AttentionLayerOptions options;
  Tensor W, W1, W2, v, bias, Wa, Wp, vp;

private:
  Rng* rng_;  // the layer's own dropout stream (named_rngs(): "dropout_rng")
};

}  // namespace attn::nn
