// The Transformer (Vaswani et al. 2017, "Attention Is All You Need", NIPS):
// an encoder and a decoder of attention layers (nn/transformer_layers.h,
// nn/transformer_stacks.h: PyTorch's nn.TransformerEncoder / Decoder layers).
//
// Legend: B batch, S source length, T target length, E model size (embed,
// d_model), H heads, hd = E / H, F feed-forward size, L decoder layers,
// V target vocabulary, P max_positions, N decoder rows.
//
// Embeddings: x = sqrt(E) emb(y) + PE(pos), dropout        [B, L, E]
//   (PE sinusoidal, sec. 3.5, or learned; source, target and output share one
//   table with tied_embeddings: all, target and output with decoder)
// Encoder: encoder_layers of self-attention + feed-forward  [B, S, E]
// Decoder: decoder_layers of causal self-attention + cross-attention over the
//   encoder's output + feed-forward                          [B, T, E]
// Output:  p(y_t) = softmax(W h_t + b)                      [V]
// Pre-norm (default): each stack ends in a LayerNorm; post-norm: the paper's.
//
// Parameters (PyTorch's names under these prefixes): src_embed.weight and
// tgt_embed.weight [V, E] (one embed.weight when tied: all), encoder.* and
// decoder.* (the stacks), src_positions.weight / tgt_positions.weight [P, E]
// (learned positions only), output.weight [V, E] (absent when tied),
// output.bias [V].
//
// Decoding: encode() returns the memory {values [B, S, E] (zeros past each
// length), lengths [B], and per decoder layer l (0-based) the cross-attention's
// keys and values "cross_k.<l>", "cross_v.<l>" [B, H, S, hd], computed once per
// sentence (detached: only the searches read them)} and the state {prefix
// [B, P]: the tokens read so far, which step() recomputes}. The searches'
// decoder (transformer_search.h) keeps each layer's self-attention keys and
// values instead and reads the memory's per-sentence keys through the rows map.
// Attention maps: "cross.layer<l>.head<h>" and "cross.layer<l>.mean" (1-based),
// the default first: the mean over the heads of the last layer; the encoder's
// self-attention maps (encoder_attention, on demand) "self.layer<l>.head<h>" /
// ".mean", the default the last encoder layer's mean.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "attn/autograd/ops_sequence.h"
#include "attn/models/seq2seq.h"
#include "attn/models/transformer/transformer_config.h"
#include "attn/nn/layers.h"
#include "attn/nn/multihead.h"
#include "attn/nn/positional_embedding.h"
#include "attn/nn/transformer_stacks.h"

namespace attn::models {

class Transformer : public Seq2SeqModel {
public:
  // Validates `config` (type transformer); parameters from `init`.
  Transformer(const ModelConfig& config, Rng& init, uint64_t dropout_seed);

  // src [B, S] ids, lengths [B] in [1, S] -> memory (see the file comment) and state {prefix [B, P]}.
  Encoded encode(const Tensor& src, const std::vector<int64_t>& lengths) const override;
  // The reference step: the whole prefix (state's prefix with prev [N] at t) run
  // through the decoder stack again, t < P; every attention map of attention_maps().
  // memory: values [N, S, E] and lengths [N] are read. Differentiable.
  StepOutput step(const EncoderMemory& memory, const DecoderState& state, const Tensor& prev, int64_t t,
                  StepDetail detail = StepDetail::Weights) const override;
  std::vector<std::string> attention_maps() const override;
  // "self.layer<l>.head<h>" / ".mean" over the encoder's layers, the last layer's mean first.
  std::vector<std::string> encoder_attention_maps() const override;
  // src [B, S], lengths [B] -> the map's weights [B, S, S] (the encoder run again with its weights).
  Tensor encoder_attention(const Tensor& src, const std::vector<int64_t>& lengths,
                           const std::string& name) const override;
  // b.tgt_in [B, T] -> [T * B, E] time-major: the decoder over all real positions at once (causal,
  // fused attention; tgt_out's padding, when given, is skipped and its rows are zeros).
  Tensor forced_features(const data::Seq2SeqBatch& b) const override;
  OutputLayer output_layer() const override { return {out_w_, out_b_}; }
  // The cached search decoder (transformer_search.h). Throws std::logic_error in training mode.
  std::unique_ptr<StepDecoder> decoder(const EncoderMemory& memory, int64_t max_rows,
                                       std::shared_ptr<const PreparedDecoder> prepared = nullptr) const override;
  std::shared_ptr<const PreparedDecoder> prepare_decoder(int64_t max_rows, nn::StepWeightType compute) const override;
  bool searches_in(nn::StepWeightType) const override { return true; }  // every type of nn/step_weight_types.h

  // encode() on prepare_decoder()'s weights when they hold the encoder's (int8
  // and bf16: transformer_prepared.h), else encode().
  Encoded encode_for_search(const Tensor& src, const std::vector<int64_t>& lengths,
                            const PreparedDecoder* prepared) const override;

  const TransformerConfig& section() const { return cfg_; }
  const nn::TransformerEncoder& encoder_stack() const { return *encoder_; }
  const nn::TransformerDecoder& decoder_stack() const { return *decoder_; }
  const nn::Embedding& target_embedding() const { return *tgt_embed_; }
  // The position signal added at position t: [E] (the sinusoid or the learned row; P rows).
  const float* position_row(int64_t t) const;

  // ids [B, L] -> sqrt(E) emb(ids) + positions from `start`, dropout: [B, L, E]
  Tensor embed(const Tensor& ids, bool target, int64_t start = 0) const;

private:
  // src [B, S] -> the encoder's output on the real positions [N, E] (the rows of `rows`)
  Tensor encode_rows(const Tensor& src, const PaddedRows& rows) const;

  const TransformerConfig& cfg_;  // config_'s section
  std::shared_ptr<nn::Embedding> src_embed_, tgt_embed_;  // the same module when tied: all
  std::shared_ptr<nn::PositionalEncoding> src_sin_, tgt_sin_;             // positions: sinusoidal
  std::shared_ptr<nn::LearnedPositionalEmbedding> src_learned_, tgt_learned_;  // positions: learned
  std::shared_ptr<nn::TransformerEncoder> encoder_;
  std::shared_ptr<nn::TransformerDecoder> decoder_;
  Tensor out_w_, out_b_;  // [V, E] (the target embedding when tied), [V]
};

// "cross.layer<l>.head<h>" (head >= 1) or "cross.layer<l>.mean" (head 0), l and h 1-based.
std::string transformer_map_name(int64_t layer, int64_t head);

}  // namespace attn::models
