// The Transformer's encoder and decoder layers (Vaswani et al. 2017, "Attention
// Is All You Need", sec. 3.1), as PyTorch's nn.TransformerEncoderLayer and
// nn.TransformerDecoderLayer with batch_first=True: same sublayers, same places
// for dropout, same parameter names and shapes (state dicts map one to one).
//
// Legend: B batch, S source (memory) length, T target length, L either, E model
// size (d_model), H heads, F feed-forward size. Batch-first: x [B, L, E].
//
// Each sublayer f (self-attention, cross-attention, feed-forward) sits in a
// residual branch with layer norm, either
//   pre-norm  (norm_first, attn's default):  x = x + dropout_i(f(norm_i(x)))
//   post-norm (the paper's, PyTorch's):      x = norm_i(x + dropout_i(f(x)))
// Pre-norm keeps an un-normalised residual path through the stack, which trains
// without a careful warm-up (Xiong et al. 2020) but needs a final LayerNorm after
// the last layer (transformer_stacks.h adds it).
//
// Dropout (training mode): on the attention weights inside the fused kernel, and
// nn::HashedDropout on each residual branch and on the feed-forward activation
// (one seed per call from each layer's own stream; nothing of [B, L, F] stored).
//
// Attention runs through nn::MultiHeadAttention: the fused kernels (no [L, L]
// matrix) unless weights are asked for; self-attention's Q, K, V projections are
// one GEMM, cross-attention's two (Q; K and V together).
#pragma once
#include <memory>

#include "attn/autograd/ops.h"
#include "attn/nn/layers.h"
#include "attn/nn/hashed_dropout.h"
#include "attn/nn/multihead.h"

namespace attn::nn {

struct TransformerLayerOptions {
  TransformerLayerOptions(int64_t d_model, int64_t nhead) : d_model(d_model), nhead(nhead) {}
  int64_t d_model;                          // E (required), divisible by nhead
  int64_t nhead;                            // H (required)
  int64_t dim_feedforward = 2048;           // F, PyTorch's default
  float dropout = 0.1f;                     // on each residual branch and on the feed-forward activation
  float attention_dropout = -1.0f;          // on the attention weights; < 0: the same as dropout (PyTorch)
  Activation activation = Activation::ReLU;  // PyTorch's default; GELU is the exact erf form
  bool norm_first = true;                   // pre-norm (PyTorch's default is false: post-norm)
  float layer_norm_eps = 1e-5f;
  attention::Kernel kernel = attention::Kernel::Fused;  // attention without weights; Fused: never [L, L]
  TransformerLayerOptions& set_dim_feedforward(int64_t f) { dim_feedforward = f; return *this; }
  TransformerLayerOptions& set_dropout(float p) { dropout = p; return *this; }
  TransformerLayerOptions& set_attention_dropout(float p) { attention_dropout = p; return *this; }
  TransformerLayerOptions& set_activation(Activation a) { activation = a; return *this; }
  TransformerLayerOptions& set_norm_first(bool b) { norm_first = b; return *this; }
  TransformerLayerOptions& set_layer_norm_eps(float e) { layer_norm_eps = e; return *this; }
  TransformerLayerOptions& set_kernel(attention::Kernel k) { kernel = k; return *this; }
};

// Attention weights a layer hands back when asked (for inspection, attn explain):
// each [B, H, Lq, Lk] before dropout, per head. Asking forces the materialising path.
struct TransformerLayerWeights {
  Tensor self_attn;       // [B, H, L, L] (decoder: [B, H, T, T], causal)
  Tensor multihead_attn;  // decoder only: [B, H, T, S] over the memory
};

// Self-attention + feed-forward. Parameters (PyTorch's names):
//   self_attn.in_proj_weight [3E, E], self_attn.in_proj_bias [3E],
//   self_attn.out_proj.weight [E, E], self_attn.out_proj.bias [E],
//   linear1.weight [F, E], linear1.bias [F], linear2.weight [E, F], linear2.bias [E],
//   norm1.weight/bias [E], norm2.weight/bias [E].
// Random streams: self_attn, dropout (activation), dropout1, dropout2 (residuals).
class TransformerEncoderLayer : public Module {
public:
  TransformerEncoderLayer(const TransformerLayerOptions& opt, Rng& rng);
  // x [B, S, E], lengths [B] float-encoded in [0, S] (keys j >= lengths[b] are
  // padding; undefined: none) -> [B, S, E]. Padding positions get outputs too
  // (they attend over the real keys); a model ignores them.
  Tensor forward(const Tensor& x, const Tensor& lengths = Tensor(), TransformerLayerWeights* weights = nullptr) const;
  // The same on the real positions alone: x [N, E], the rows of `rows`
  // (autograd/ops_sequence.h) -> [N, E]; nothing is computed for padding.
  Tensor forward_rows(const Tensor& x, const PaddedRows& rows) const;

  TransformerLayerOptions options;
  std::shared_ptr<MultiHeadAttention> self_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2;
  std::shared_ptr<HashedDropout> dropout, dropout1, dropout2;
};

// Masked self-attention + cross-attention over the encoder's output + feed-forward.
// Parameters: as the encoder layer, plus multihead_attn.* (the cross-attention,
// same shapes as self_attn) and norm3.weight/bias [E]; norm2 belongs to the
// cross-attention branch and norm3 to the feed-forward (PyTorch's order).
// Random streams: self_attn, multihead_attn, dropout, dropout1..3.
class TransformerDecoderLayer : public Module {
public:
  TransformerDecoderLayer(const TransformerLayerOptions& opt, Rng& rng);
  // x [B, T, E] (the target side), memory [B, S, E] (the encoder's output),
  // memory_lengths [B] in [0, S] (source padding; undefined: none), target_lengths
  // [B] in [0, T] (target padding; optional: under the causal mask a real position
  // never sees a padding one) -> [B, T, E]. Self-attention is causal: position i
  // sees positions j <= i.
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths = Tensor(),
                 const Tensor& target_lengths = Tensor(), TransformerLayerWeights* weights = nullptr) const;
  // The same on the real positions alone: x [Nt, E] (rows of t_rows), memory
  // [Ns, E] (rows of m_rows, the same sentences) -> [Nt, E].
  Tensor forward_rows(const Tensor& x, const PaddedRows& t_rows, const Tensor& memory, const PaddedRows& m_rows) const;

  TransformerLayerOptions options;
  std::shared_ptr<MultiHeadAttention> self_attn, multihead_attn;
  std::shared_ptr<Linear> linear1, linear2;
  std::shared_ptr<LayerNorm> norm1, norm2, norm3;
  std::shared_ptr<HashedDropout> dropout, dropout1, dropout2, dropout3;
};

}  // namespace attn::nn
