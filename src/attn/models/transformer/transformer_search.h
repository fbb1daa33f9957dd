// The Transformer's search decoder: incremental decoding on a per-layer
// key / value cache (internal to models/transformer/).
//
// Legend: B sentences, N live decoder rows, M = max_rows, T = max_steps (<= P),
// S source length, E model size, H heads, hd = E / H, L decoder layers, V vocabulary.
//
// State (made once by start(), updated in place): per layer l (0-based)
// "self_k.<l>" and "self_v.<l>" [T', M, E], the self-attention's keys and
// values, unmoved by the searches' gathers: step t writes row i's position t
// into slot [t, i], and "self_slot" [M, T'] (a per-row tensor, gathered:
// t numbers a row) holds the slot of each of a row's positions, so a beam's
// reordering moves no cache (moving it copied rows x layers x t x 2E floats a
// step: 13% of an int8 beam search). T' is 64 (or max_positions)
// and doubles when a step reaches it (up to T). Step t embeds
// the previous tokens [N, E] and runs every layer on the N rows only: the
// projections and the feed-forward are products over the rows through weights
// laid out once per model (nn::StepLinear, packed for kPackRows rows or more,
// W_Q pre-scaled by 1 / sqrt(hd): no BLAS call re-packs a weight per step);
// self-attention writes position t and attends over positions <= t (O(t) per
// row, kernels/mha_rows.h: all heads of a row in one pass over its positions,
// each read at its slot); cross-attention reads the memory's "cross_k.<l>" /
// "cross_v.<l>" [B, H, S, hd] of each row's sentence (the rows map: nothing of
// the encoder is copied per beam); the vocabulary's top k through
// models/step_logits.h. The attention map asked for (report_attention) is
// copied out of the layer that computes it; no other map is formed.
// A step is one parallel region (each product unit's bias, activation or
// residual add applied to its tile, kernels/tile_epilogue.h): with 12 or more
// rows a thread, each thread keeps its block of rows through every phase and
// the threads meet only before the logits; with fewer, the products split by
// column units, the layer norms and attention by rows, a barrier between phases.
#pragma once
#include <memory>

#include "attn/models/seq2seq.h"

namespace attn::models {

class Transformer;

// A decoder over `memory` (encode()'s, B sentences); `prepared` from
// prepare_transformer (transformer_prepared.h) of the same model (std::invalid_argument otherwise).
std::unique_ptr<StepDecoder> make_transformer_decoder(const Transformer& model,
                                                      std::shared_ptr<const PreparedDecoder> prepared,
                                                      const EncoderMemory& memory);

}  // namespace attn::models
