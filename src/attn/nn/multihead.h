// Multi-head attention and sinusoidal positional encoding (Vaswani et al. 2017,
// "Attention Is All You Need", sec. 3.2.2 and 3.5), built on attn::attention.
//
// Legend: B batch, Lq query length, Lk key length, E model size, H heads,
// hd = E / H head size. Batch-first: x [B, L, E].
#pragma once
#include "attn/attention/attention.h"
#include "attn/autograd/ops_sequence.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn::nn {

struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim(embed_dim), num_heads(num_heads) {}
  int64_t embed_dim;     // E (required); must be divisible by num_heads
  int64_t num_heads;     // H (required)
  float dropout = 0.0f;  // attention dropout on the weights, training mode only
  bool bias = true;      // biases on the input and output projections
  attention::Kernel kernel = attention::Kernel::Auto;  // SDPA path when no weights are requested
  MultiHeadAttentionOptions& set_dropout(float p) { dropout = p; return *this; }
  MultiHeadAttentionOptions& set_bias(bool b) { bias = b; return *this; }
  MultiHeadAttentionOptions& set_kernel(attention::Kernel k) { kernel = k; return *this; }
};

// MultiHead(Q, K, V) = Concat(head_1, ..., head_H) W_O,
// head_h = softmax(Q W_Q^h (K W_K^h)^T / sqrt(hd)) V W_V^h.
// Parameters as PyTorch's nn.MultiheadAttention (so state dicts map one to one):
// in_proj_weight [3E, E] (rows: W_Q, W_K, W_V), in_proj_bias [3E],
// out_proj.weight [E, E], out_proj.bias [E]. Init as PyTorch: xavier-uniform
// in_proj, U(+-1/sqrt(E)) out_proj.weight, zero biases.
class MultiHeadAttention : public Module {
public:
  MultiHeadAttention(const MultiHeadAttentionOptions& opt, Rng& rng);

  // query [B, Lq, E], key [B, Lk, E], value [B, Lk, E] -> context [B, Lq, E] and,
  // when need_weights, the per-head weights [B, H, Lq, Lk] (not averaged over heads).
  // Without weights the heads run through the fused kernel (options.kernel).
  // The projections: query = key = value (the same tensor: self-attention) is one
  // GEMM over in_proj_weight; key = value (cross-attention over one memory) is two,
  // W_Q and [W_K; W_V]; the fused kernel reads both packed results in place.
  attention::AttentionOutput forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const attention::Mask& mask = {}, bool need_weights = false) const;

  // The same on the real positions of padded batches as rows (autograd/ops_sequence.h),
  // always through the fused kernel: the projections and W_O run over the rows,
  // the heads over the padded form (rows unpacked, the context packed again).
  // Self-attention: x [N, E], the rows of `rows` -> [N, E]; key j visible to
  // query i when j < its sentence's length (and j <= i when causal).
  Tensor self_attention_rows(const Tensor& x, const PaddedRows& rows, bool causal) const;
  // Cross-attention: x [Nq, E] (rows of q_rows), memory [Nk, E] (rows of
  // m_rows, the same B sentences) -> [Nq, E]; keys past each memory length hidden.
  Tensor cross_attention_rows(const Tensor& x, const PaddedRows& q_rows, const Tensor& memory,
                              const PaddedRows& m_rows) const;

  MultiHeadAttentionOptions options;
  Tensor in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias;  // biases undefined without bias

private:
  // The fused kernel's options for `mask` (the attention dropout's seed drawn in training mode).
  attention::FusedOptions fused_options(const attention::Mask& mask) const;
  // in_proj rows [part E, (part + parts) E) applied to x [..., E] -> [..., parts E]: one GEMM
  Tensor project(const Tensor& x, int part, int parts) const;

  Rng* rng_;  // the layer's own dropout stream (named_rngs(): "dropout_rng")
};

// PE(pos, 2i) = sin(pos / 10000^(2i/E)), PE(pos, 2i+1) = cos(pos / 10000^(2i/E)),
// added to the input, then dropout. No parameters.
class PositionalEncoding : public Module {
public:
  PositionalEncoding(int64_t dim, int64_t max_len, float dropout, Rng& rng);
  // x [B, L, E] (start + L <= max_len) -> x + PE[start : start + L]; start > 0
  // for the positions of a decoder step after `start` earlier ones
  Tensor forward(const Tensor& x, int64_t start = 0) const;
  Tensor table;  // [max_len, E], not a parameter
  float dropout;

private:
  Rng* rng_;  // the layer's own dropout stream (named_rngs(): "dropout_rng")
};

}  // namespace attn::nn
