// The Transformer's encoder on the prepared int8 / bf16 weights (see
// transformer_prepared.h): the layers of nn::TransformerEncoderLayer (pre- or
// post-norm residuals, ReLU or GELU) in inference, each product through
// nn::StepLinear, the attention on the fused kernel Transformer::encode() uses.
#include <cmath>
#include <stdexcept>

#include "attn/attention/attention.h"
#include "attn/autograd/node.h"
#include "attn/autograd/ops.h"
#include "attn/models/model_parts.h"
#include "attn/models/transformer/transformer.h"
#include "attn/models/transformer/transformer_prepared.h"

namespace attn::models {
namespace {

// x [B S, E] -> the layer's output [B S, E]; f holds the key lengths and 1 / sqrt(hd)
Tensor encoder_layer(const nn::TransformerEncoderLayer& l, const PreparedEncoderLayer& w, nn::StepInput& in,
                     const Tensor& x, int64_t B, int64_t S, const attention::FusedOptions& f) {
  const int64_t E = x.size(1), H = l.options.nhead;
  const auto act = l.options.activation == Activation::GELU ? kernels::activation::Kind::GELU
                                                               : kernels::activation::Kind::ReLU;
  auto attend = [&](const Tensor& h) {
    const Tensor qkv = reshape(apply(w.qkv, in, h), {B, S, 3 * E});
    return apply(w.out, in, reshape(attention::sdpa_fused_packed(qkv, H, f), {B * S, E}));
  };
  auto ff = [&](const Tensor& h) { return apply(w.ff2, in, apply(w.ff1, in, h, &act)); };
  if (l.options.norm_first) {
    const Tensor h = add(x, attend(l.norm1->forward(x)));
    return add(h, ff(l.norm2->forward(h)));
  }
  const Tensor h = l.norm1->forward(add(x, attend(x)));
  return l.norm2->forward(add(h, ff(h)));
}

}  // namespace

Encoded encode_prepared(const Transformer& model, const TransformerPrepared& p, const Tensor& src,
                        const std::vector<int64_t>& lengths) {
  detail::check_source("transformer encode", src, lengths, model.config().src_vocab);
  const nn::TransformerEncoder& enc = model.encoder_stack();
  if (p.model != &model || p.encoder.size() != enc.layers.size() || p.cross_kv.size() != model.decoder_stack().layers.size())
    throw std::invalid_argument("transformer encode: the prepared weights hold no encoder of this transformer");
  NoGradGuard no_grad;
  const int64_t B = src.size(0), S = src.size(1), E = model.config().embed, H = model.section().heads, hd = E / H;
  Encoded e;
  e.memory.lengths() = detail::lengths_tensor(lengths);
  attention::FusedOptions f;
  f.mask.key_lengths = e.memory.lengths();
  f.scale = 1.0f / std::sqrt(float(hd));
  nn::StepInput in;
  Tensor x = reshape(model.embed(src, false), {B * S, E});
  for (size_t l = 0; l < enc.layers.size(); ++l) x = encoder_layer(*enc.layers[l], p.encoder[l], in, x, B, S, f);
  if (enc.norm) x = enc.norm->forward(x);
  for (int64_t b = 0; b < B; ++b)  // zeros past each length, as encode()'s
    std::fill(x.data() + (b * S + lengths[size_t(b)]) * E, x.data() + (b + 1) * S * E, 0.0f);
  for (size_t l = 0; l < p.cross_kv.size(); ++l) {  // [B S, 2E] -> keys and values [B, H, S, hd]
    const Tensor kv = apply(p.cross_kv[l], in, x);
    for (int which = 0; which < 2; ++which)
      e.memory[(which == 0 ? "cross_k." : "cross_v.") + std::to_string(l)] =
          permute(reshape(slice(kv, 1, which * E, E), {B, S, H, hd}), {0, 2, 1, 3});
  }
  e.memory.values() = reshape(x, {B, S, E});
  e.state.set("prefix", Tensor::zeros({B, model.section().max_positions}));
  return e;
}

}  // namespace attn::models
