// The Transformer's config section (model.type: transformer; Vaswani et al.
// 2017, "Attention Is All You Need"). Flat keys beside the common ones
// (models/config.h: embed is d_model E, dropout is on the embeddings, the
// residual branches and the feed-forward activation; tied_embeddings none |
// decoder | all, all sharing source, target and output over a joint vocabulary):
//   encoder_layers, decoder_layers  layers in each stack (3 + 3 in configs/multi30k-transformer.yaml)
//   heads                           H, attention heads (divides embed)
//   feed_forward                    F, the position-wise feed-forward size
//   activation: relu | gelu         the feed-forward's (gelu: exact, erf)
//   norm: pre | post                layer norm before each sublayer (pre, with a final norm after
//                                   each stack) or after each residual sum (post, the paper's)
//   positions: sinusoidal | learned positional encoding (learned: one trained vector per position)
//   max_positions                   the longest source or target (in pieces, BOS / EOS included)
//   attention_dropout               on the attention weights
#pragma once
#include <cstdint>
#include <memory>

#include "attn/models/config.h"

namespace attn::models {

enum class TransformerActivation { Relu, Gelu };
enum class TransformerNorm { Pre, Post };
enum class TransformerPositions { Sinusoidal, Learned };

struct TransformerConfig : KindConfig {
  int64_t encoder_layers = 6;                                        // >= 1
  int64_t decoder_layers = 6;                                        // >= 1
  int64_t heads = 8;                                                 // H >= 1, embed % H == 0
  int64_t feed_forward = 2048;                                       // F >= 1
  TransformerActivation activation = TransformerActivation::Relu;
  TransformerNorm norm = TransformerNorm::Pre;
  TransformerPositions positions = TransformerPositions::Sinusoidal;
  int64_t max_positions = 1024;                                      // P >= 2
  double attention_dropout = 0.1;                                    // in [0, 1)
  std::unique_ptr<KindConfig> clone() const override { return std::make_unique<TransformerConfig>(*this); }
};

const char* name(TransformerActivation a);
const char* name(TransformerNorm n);
const char* name(TransformerPositions p);

}  // namespace attn::models
