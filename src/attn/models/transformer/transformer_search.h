// The Transformer's search decoder: incremental decoding on a per-layer
// key / value cache (internal to models/transformer/).
//
// Legend: B sentences, N live decoder rows, M = max_rows, T = max_steps (<= P),
// S source length, E model size, H heads, hd = E / H, L decoder layers, V vocabulary.
//
// State (made once by start(), updated in place, reordered by the searches'
// gathers): per layer l (0-based) "self_k.<l>" and "self_v.<l>" [M, H, T', hd],
// the self-attention's keys and values of positions 0 .. t - 1; T' starts at 4
// and doubles when a step reaches it (up to T), so a search touches memory in
// proportion to the steps it takes (a batch of 64 x beam 5 with room for 85
// steps would be 334 MB of fresh pages per search otherwise). Step t embeds
// the previous tokens [N, E] and runs every layer on the N rows only: the
// projections and the feed-forward are products over the rows through weights
// laid out once per model (nn::StepLinear, packed for kPackRows rows or more,
// W_Q pre-scaled by 1 / sqrt(hd): no BLAS call re-packs a weight per step);
// self-attention appends position t to the cache and attends over positions
// <= t (O(t) per row and head, kernels/luong_rows.h's vectorised dot-product
// row); a gather moves only the cache's filled positions; cross-attention reads the memory's "cross_k.<l>" /
// "cross_v.<l>" [B, H, S, hd] of each row's sentence (the rows map: nothing of
// the encoder is copied per beam); the vocabulary's top k through
// models/step_logits.h. The attention map asked for (report_attention) is
// copied out of the layer that computes it; no other map is formed.
#pragma once
#include <memory>

#include "attn/models/seq2seq.h"

namespace attn::models {

class Transformer;

// Every decoder layer's maps and the output projection laid out once (nn::StepLinear,
// packed for kPackRows rows or more): copies, valid while the model's parameters stay unchanged.
std::shared_ptr<const PreparedDecoder> prepare_transformer_decoder(const Transformer& model, int64_t max_rows,
                                                                  nn::StepWeightType compute);
// A decoder over `memory` (encode()'s, B sentences); `prepared` from
// prepare_transformer_decoder of the same model (std::invalid_argument otherwise).
std::unique_ptr<StepDecoder> make_transformer_decoder(const Transformer& model,
                                                      std::shared_ptr<const PreparedDecoder> prepared,
                                                      const EncoderMemory& memory);

}  // namespace attn::models
