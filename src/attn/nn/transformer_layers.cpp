#include "attn/nn/transformer_layers.h"

#include <stdexcept>
#include <string>

#include "attn/nn/feed_forward.h"

namespace attn::nn {
namespace {

void check_options(const char* who, const TransformerLayerOptions& o) {
  auto bad_p = [](float p) { return !(p >= 0.0f && p < 1.0f); };
  if (o.d_model <= 0 || o.nhead <= 0 || o.d_model % o.nhead != 0 || o.dim_feedforward <= 0 || bad_p(o.dropout) ||
      (o.attention_dropout >= 0.0f && bad_p(o.attention_dropout)) || !(o.layer_norm_eps > 0.0f))
    throw std::invalid_argument(std::string(who) + ": d_model " + std::to_string(o.d_model) + ", nhead " +
                                std::to_string(o.nhead) + ", dim_feedforward " + std::to_string(o.dim_feedforward) +
                                ", dropout " + std::to_string(o.dropout) + ", attention_dropout " +
                                std::to_string(o.attention_dropout) + ", layer_norm_eps " +
                                std::to_string(o.layer_norm_eps) +
                                " (needs d_model a positive multiple of nhead, F > 0, dropouts in [0, 1), eps > 0)");
}

std::shared_ptr<MultiHeadAttention> make_attention(const TransformerLayerOptions& o, Rng& rng) {
  const float p = o.attention_dropout >= 0.0f ? o.attention_dropout : o.dropout;
  return std::make_shared<MultiHeadAttention>(
      MultiHeadAttentionOptions(o.d_model, o.nhead).set_dropout(p).set_kernel(o.kernel), rng);
}

// x [B, L, E] with lengths [B] (or undefined) for the messages of both layers
void check_input(const char* who, const char* what, const Tensor& x, int64_t E, const Tensor& lengths) {
  if (!x.defined() || x.dim() != 3 || x.size(2) != E)
    throw std::invalid_argument(std::string(who) + ": " + what + " " + (x.defined() ? x.shape().str() : "undefined") +
                                " (expects [B, L, " + std::to_string(E) + "])");
  if (lengths.defined() && (lengths.dim() != 1 || lengths.size(0) != x.size(0)))
    throw std::invalid_argument(std::string(who) + ": " + what + " lengths " + lengths.shape().str() + " for " +
                                x.shape().str() + " (expects [B])");
}

// One residual branch: pre-norm x + drop(f(norm(x))), post-norm norm(x + drop(f(x))).
template <class F>
Tensor residual(bool norm_first, const Tensor& x, const LayerNorm& norm, const HashedDropout& drop, F&& f) {
  if (norm_first) return add(x, drop.forward(f(norm.forward(x))));
  return norm.forward(add(x, drop.forward(f(x))));
}

// An encoder layer's branches around `attend` (x -> self-attention's output), padded or rows.
template <class Attend>
Tensor encoder_branches(const TransformerEncoderLayer& l, const Tensor& x, Attend&& attend) {
  const TransformerLayerOptions& o = l.options;
  Tensor h = residual(o.norm_first, x, *l.norm1, *l.dropout1, attend);
  return residual(o.norm_first, h, *l.norm2, *l.dropout2,
                  [&](const Tensor& in) { return feed_forward(in, *l.linear1, *l.linear2, o.activation, *l.dropout); });
}

// A decoder layer's branches around `self_attend` and `cross_attend`, padded or rows.
template <class SelfAttend, class CrossAttend>
Tensor decoder_branches(const TransformerDecoderLayer& l, const Tensor& x, SelfAttend&& self_attend,
                        CrossAttend&& cross_attend) {
  const TransformerLayerOptions& o = l.options;
  Tensor h = residual(o.norm_first, x, *l.norm1, *l.dropout1, self_attend);
  h = residual(o.norm_first, h, *l.norm2, *l.dropout2, cross_attend);
  return residual(o.norm_first, h, *l.norm3, *l.dropout3,
                  [&](const Tensor& in) { return feed_forward(in, *l.linear1, *l.linear2, o.activation, *l.dropout); });
}

std::shared_ptr<LayerNorm> make_norm(const TransformerLayerOptions& o) { return std::make_shared<LayerNorm>(o.d_model, o.layer_norm_eps); }

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(const TransformerLayerOptions& opt, Rng& rng) : options(opt) {
  check_options("TransformerEncoderLayer", opt);
  const int64_t E = opt.d_model, F = opt.dim_feedforward;
  // construction in PyTorch's order, so parameters are listed in its state dict's order
  self_attn = register_module("self_attn", make_attention(opt, rng));
  linear1 = register_module("linear1", std::make_shared<Linear>(E, F, true, rng));
  dropout = register_module("dropout", std::make_shared<HashedDropout>(opt.dropout, rng));
  linear2 = register_module("linear2", std::make_shared<Linear>(F, E, true, rng));
  norm1 = register_module("norm1", make_norm(opt));
  norm2 = register_module("norm2", make_norm(opt));
  dropout1 = register_module("dropout1", std::make_shared<HashedDropout>(opt.dropout, rng));
  dropout2 = register_module("dropout2", std::make_shared<HashedDropout>(opt.dropout, rng));
}

Tensor TransformerEncoderLayer::forward(const Tensor& x, const Tensor& lengths, TransformerLayerWeights* weights) const {
  check_input("TransformerEncoderLayer", "x", x, options.d_model, lengths);
  attention::Mask mask;
  mask.key_lengths = lengths;
  return encoder_branches(*this, x, [&](const Tensor& in) {
    attention::AttentionOutput a = self_attn->forward(in, in, in, mask, weights != nullptr);
    if (weights) weights->self_attn = a.weights;
    return a.context;
  });
}

Tensor TransformerEncoderLayer::forward_rows(const Tensor& x, const PaddedRows& rows) const {
  return encoder_branches(*this, x, [&](const Tensor& in) { return self_attn->self_attention_rows(in, rows, false); });
}

TransformerDecoderLayer::TransformerDecoderLayer(const TransformerLayerOptions& opt, Rng& rng) : options(opt) {
  check_options("TransformerDecoderLayer", opt);
  const int64_t E = opt.d_model, F = opt.dim_feedforward;
  self_attn = register_module("self_attn", make_attention(opt, rng));
  multihead_attn = register_module("multihead_attn", make_attention(opt, rng));
  linear1 = register_module("linear1", std::make_shared<Linear>(E, F, true, rng));
  dropout = register_module("dropout", std::make_shared<HashedDropout>(opt.dropout, rng));
  linear2 = register_module("linear2", std::make_shared<Linear>(F, E, true, rng));
  norm1 = register_module("norm1", make_norm(opt));
  norm2 = register_module("norm2", make_norm(opt));
  norm3 = register_module("norm3", make_norm(opt));
  dropout1 = register_module("dropout1", std::make_shared<HashedDropout>(opt.dropout, rng));
  dropout2 = register_module("dropout2", std::make_shared<HashedDropout>(opt.dropout, rng));
  dropout3 = register_module("dropout3", std::make_shared<HashedDropout>(opt.dropout, rng));
}

Tensor TransformerDecoderLayer::forward(const Tensor& x, const Tensor& memory, const Tensor& memory_lengths,
                                        const Tensor& target_lengths, TransformerLayerWeights* weights) const {
  check_input("TransformerDecoderLayer", "x", x, options.d_model, target_lengths);
  check_input("TransformerDecoderLayer", "memory", memory, options.d_model, memory_lengths);
  if (memory.size(0) != x.size(0))
    throw std::invalid_argument("TransformerDecoderLayer: x " + x.shape().str() + " and memory " + memory.shape().str() +
                                " differ in batch size");
  attention::Mask self_mask, memory_mask;
  self_mask.causal = true;
  self_mask.key_lengths = target_lengths;
  memory_mask.key_lengths = memory_lengths;
  const bool w = weights != nullptr;
  return decoder_branches(
      *this, x,
      [&](const Tensor& in) {
        attention::AttentionOutput a = self_attn->forward(in, in, in, self_mask, w);
        if (w) weights->self_attn = a.weights;
        return a.context;
      },
      [&](const Tensor& in) {
        attention::AttentionOutput a = multihead_attn->forward(in, memory, memory, memory_mask, w);
        if (w) weights->multihead_attn = a.weights;
        return a.context;
      });
}

Tensor TransformerDecoderLayer::forward_rows(const Tensor& x, const PaddedRows& t_rows, const Tensor& memory,
                                             const PaddedRows& m_rows) const {
  return decoder_branches(
      *this, x, [&](const Tensor& in) { return self_attn->self_attention_rows(in, t_rows, true); },
      [&](const Tensor& in) { return multihead_attn->cross_attention_rows(in, t_rows, memory, m_rows); });
}

}  // namespace attn::nn
