// Stacks of Transformer layers, as PyTorch's nn.TransformerEncoder /
// nn.TransformerDecoder: N layers (layers.0 ... layers.N-1, each named as
// transformer_layers.h lists) and an optional final LayerNorm (`norm`).
//
// Legend: B batch, S source length, T target length, E model size. Batch-first.
//
// Pre-norm layers leave their output un-normalised (the residual path is the
// sum of every branch), so a pre-norm stack needs the final norm; post-norm
// layers end in a norm already. nn.Transformer adds it to both; here it is
// on for pre-norm and off for post-norm unless `final_norm` says otherwise.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "attn/nn/transformer_layers.h"

namespace attn::nn {

struct TransformerStackOptions {
  TransformerStackOptions(const TransformerLayerOptions& layer, int64_t num_layers) : layer(layer), num_layers(num_layers) {}
  TransformerLayerOptions layer;  // every layer's options (required)
  int64_t num_layers;             // N >= 1 (required)
  std::optional<bool> final_norm;  // default: layer.norm_first (see above)
  bool has_final_norm() const { return final_norm.value_or(layer.norm_first); }
  TransformerStackOptions& set_final_norm(bool b) { final_norm = b; return *this; }
};

// Parameters: layers.<i>.<encoder layer parameter>, norm.weight/bias [E] when has_final_norm().
class TransformerEncoder : public Module {
public:
  TransformerEncoder(const TransformerStackOptions& opt, Rng& rng);
  // x [B, S, E] (embedded, positions added), lengths [B] in [0, S] or undefined ->
  // the memory [B, S, E]. weights: when given, one entry per layer (self_attn set).
  Tensor forward(const Tensor& x, const Tensor& lengths = Tensor(),
                 std::vector<TransformerLayerWeights>* weights = nullptr) const;
  // The same on the real positions alone: x [N, E], the rows of `rows` -> [N, E].
  Tensor forward_rows(const Tensor& x, const PaddedRows& rows) const;

  TransformerStackOptions options;
  std::vector<std::shared_ptr<TransformerEncoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;  // null without the final norm
};

// Parameters: layers.<i>.<decoder layer parameter>, norm.weight/bias [E] when has_final_norm().
class TransformerDecoder : public Module {
public:
  TransformerDecoder(const TransformerStackOptions& opt, Rng& rng);
  // x [B, T, E] (embedded target prefix, positions added), memory [B, S, E],
  // memory_lengths [B] in [0, S], target_lengths [B] in [0, T] (both optional) ->
  // [B, T, E], before the output projection. weights: one entry per layer.
  Tensor forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths = Tensor(),
                 const Tensor& target_lengths = Tensor(), std::vector<TransformerLayerWeights>* weights = nullptr) const;
  // The same on the real positions alone: x [Nt, E] (rows of t_rows), memory
  // [Ns, E] (rows of m_rows, the same sentences) -> [Nt, E].
  Tensor forward_rows(const Tensor& x, const PaddedRows& t_rows, const Tensor& memory, const PaddedRows& m_rows) const;

  TransformerStackOptions options;
  std::vector<std::shared_ptr<TransformerDecoderLayer>> layers;
  std::shared_ptr<LayerNorm> norm;  // null without the final norm
};

}  // namespace attn::nn
