// The Transformer's weights laid out once for searches (internal to
// models/transformer/): every linear map of the decoder layers and the output
// layer as nn::StepLinear of the search's type, and in int8 / bf16 also the
// encoder's maps and the cross-attention's key / value maps, so that the
// encoder of a reduced-precision search runs on them (transformer_encode.cpp).
//
// Legend: E model size, H heads, hd = E / H, F feed-forward size, V vocabulary,
// N rows of a product.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/kernels/activation.h"
#include "attn/models/seq2seq.h"
#include "attn/models/step_packing.h"
#include "attn/nn/step_linear.h"

namespace attn::nn {
class TransformerDecoderLayer;
class TransformerEncoderLayer;
}  // namespace attn::nn

namespace attn::models {

class Transformer;

// One linear map laid out for the search: a copy of the weight (scaled where
// a step folds a constant in) and its bias.
struct PreparedLinear {
  Tensor w, b;  // [out, in], [out]
  nn::StepLinear lin;
};

// rows [r0, r0 + n) of w [out, in] (and b [out]; undefined: zeros), the first
// `scaled` of them times `scale`, laid out as `layout`
PreparedLinear prepare_rows(const Tensor& w, const Tensor& b, int64_t r0, int64_t n, int64_t scaled, float scale,
                            StepLayout layout);

// x [N, in] -> act(x W^T + b) [N, out] through the prepared weight (no BLAS
// call: nothing re-packs W per product; x converted to the weight's type in
// `in`); act null: no activation.
Tensor apply(const PreparedLinear& p, nn::StepInput& in, const Tensor& x,
             const kernels::activation::Kind* act = nullptr);

// A decoder layer's maps. The queries' 1 / sqrt(hd) is folded into W_Q and its
// bias, so the attention over the cache is a plain dot product; the
// self-attention's queries, keys and values are one product.
struct PreparedDecoderLayer {
  PreparedLinear qkv_self, out_self, q_cross, out_cross, ff1, ff2;
};

// An encoder layer's maps (queries unscaled: the fused kernel scales), and
// the cross-attention's keys and values of the decoder layer of the same
// index (W_K; W_V: one product [2E, E]).
struct PreparedEncoderLayer {
  PreparedLinear qkv, out, ff1, ff2;
};

struct TransformerPrepared final : PreparedDecoder {
  const Transformer* model = nullptr;
  nn::StepWeightType compute = nn::StepWeightType::F32;
  std::vector<PreparedDecoderLayer> layers;
  // int8 / bf16 only (empty in fp32, whose searches keep Transformer::encode()):
  std::vector<PreparedEncoderLayer> encoder;  // [encoder layers]
  std::vector<PreparedLinear> cross_kv;       // [decoder layers], [2E, E] each
  Tensor w_y, b_y;  // [V, E] and [V] copies: valid while the model's parameters stay unchanged
  nn::StepLinear y;
};

// The weights of a search of up to max_rows rows in `compute` (see the file comment).
std::shared_ptr<const TransformerPrepared> prepare_transformer(const Transformer& model, int64_t max_rows,
                                                               nn::StepWeightType compute);

// Transformer::encode() on the prepared encoder weights (p.encoder not empty):
// src [B, S] ids, lengths [B] -> the same memory and state, each product in
// p.compute (the attention, layer norms and embeddings in fp32). No autograd.
Encoded encode_prepared(const Transformer& model, const TransformerPrepared& p, const Tensor& src,
                        const std::vector<int64_t>& lengths);

}  // namespace attn::models
