// The Transformer's encoder on the prepared int8 / bf16 weights (see
// transformer_prepared.h): the layers of nn::TransformerEncoderLayer (pre- or
// post-norm residuals, ReLU or GELU) in inference, each product through
// nn::StepLinear, the attention on the fused kernel Transformer::encode() uses.
#include <cmath>
#include <stdexcept>

#include "attn/attention/attention.h"
#include "attn/autograd/node.h"
#include "attn/autograd/ops_sequence.h"
#include "attn/autograd/ops.h"
#include "attn/models/model_parts.h"
#include "attn/models/transformer/transformer.h"
#include "attn/models/transformer/transformer_prepared.h"

namespace attn::models {
namespace {

// x [N, E] (the real positions, rows of `rows`) -> the layer's output [N, E];
// f holds the key lengths and 1 / sqrt(hd)
Tensor encoder_layer(const nn::TransformerEncoderLayer& l, const PreparedEncoderLayer& w, nn::StepInput& in,
                     const Tensor& x, const PaddedRows& rows, const attention::FusedOptions& f) {
  const int64_t H = l.options.nhead;
  const auto act = l.options.activation == Activation::GELU ? kernels::activation::Kind::GELU
                                                               : kernels::activation::Kind::ReLU;
  auto attend = [&](const Tensor& h) {
    const Tensor qkv = unpack_padded(apply(w.qkv, in, h), rows);  // [B, S, 3E]
    return apply(w.out, in, pack_padded(attention::sdpa_fused_packed(qkv, H, f), rows));
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
  const PaddedRows rows = padded_rows(lengths, S);
  Encoded e;
  e.memory.lengths() = rows.lengths_tensor;
  attention::FusedOptions f;
  f.mask.key_lengths = e.memory.lengths();
  f.scale = 1.0f / std::sqrt(float(hd));
  nn::StepInput in;
  Tensor x = pack_padded(model.embed(src, false), rows);  // [N, E]: padding never computed
  for (size_t l = 0; l < enc.layers.size(); ++l) x = encoder_layer(*enc.layers[l], p.encoder[l], in, x, rows, f);
  if (enc.norm) x = enc.norm->forward(x);
  for (size_t l = 0; l < p.cross_kv.size(); ++l) {  // [N, 2E] -> keys and values [B, H, S, hd], zeros at padding
    const Tensor kv = unpack_padded(apply(p.cross_kv[l], in, x), rows);
    for (int which = 0; which < 2; ++which)
      e.memory[(which == 0 ? "cross_k." : "cross_v.") + std::to_string(l)] =
          permute(reshape(slice(kv, 2, which * E, E), {B, S, H, hd}), {0, 2, 1, 3});
  }
  e.memory.values() = unpack_padded(x, rows);  // [B, S, E], zeros past each length, as encode()'s
  e.state.set("prefix", Tensor::zeros({B, model.section().max_positions}));
  return e;
}

}  // namespace attn::models
