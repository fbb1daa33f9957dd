// RNNsearch's decoder step for greedy and beam search: RnnSearch::step() fused
// into one parallel region per step, without autograd.
//
// Legend: B sentences (rows of the encoder memory), N decoder rows of a step
// (<= max_rows), S source length, E embedding, Dv annotation size, A
// attention size, Hd decoder size, R readout size, V target vocabulary, k
// tokens kept per row.
//
// Per step, with s the previous state and y the previous token of each row:
//   emb = E[y];  qp = s W_a^T;  gh = s W_hh^T                  (columns of both products)
//   a, c = softmax_j(v^T tanh(qp + U h_j + b_U)), sum_j a_j h_j  (rows; the sentence's cached keys)
//   gx = [emb; c] W_ih^T                                         (columns)
//   s' = GRU gates(gx + b_ih, gh + b_hh, s)                      (hidden units)
//   t = tanh([s'; c; emb] W_o^T + b_o)                           (columns, bias and tanh on the fly)
//   logits = t W_y^T + b_y, in tiles of rows x 128 logits        (columns)
//     per tile: its max and sum exp(logit - max), and a running top k of each row
//   lse = combined over the tiles; the k best logits, log p = logit - lse  (rows)
// the same equations as RnnSearch::step() (tests/test_search_step.cpp holds
// them equal), but:
//  - each product reads weights prepared once per search (nn/step_linear.h):
//    row-major for a few rows, packed panels for many, never re-packed per step;
//  - the phases run in one OpenMP region separated by barriers, instead of
//    a dozen ops with a team wake-up and a fresh output tensor each;
//  - buffers are allocated once per search for max_rows rows;
//  - rows read keys and values through the row -> sentence map: beams do not
//    copy the encoder memory;
//  - only k tokens per row leave the step, and the [N, V] logits never leave
//    the L1-sized tile they are computed in (before, the logits and then log p
//    of the whole vocabulary were written and re-read: 10 MB each per step at
//    beam 5, batch 64).
// The tokens are the k largest logits (ties by lower id) and thus the k most
// probable. Every row's result is independent of the other rows and of the
// thread count (the tiles are fixed, and the threads' top-k lists merge exactly).
#pragma once
#include <memory>

#include "attn/models/seq2seq.h"

namespace attn::models {

struct RnnSearchStepWeights {
  Tensor embed;         // [V, E] target embedding
  Tensor W_a, v;        // [A, Hd] query projection, [A] score vector
  Tensor w_ih, w_hh;    // [3Hd, E + Dv] (columns: embedding, then context), [3Hd, Hd]
  Tensor b_ih, b_hh;    // [3Hd] each, or undefined (zeros)
  Tensor w_o, b_o;      // [R, Hd + Dv + E] readout (columns: s', c, emb), [R] or undefined
  Tensor w_y, b_y;      // [V, R] vocabulary projection, [V] or undefined
};

// How the decoder lays out its weights (Auto: packed from kPackRows rows on).
enum class StepPacking { Auto, RowMajor, Packed };
constexpr int64_t kPackRows = 16;

// memory: keys [B, S, A] (U h + b_U), values [B, S, Dv], lengths [B] as
// RnnSearch::encode() returns them. Throws std::invalid_argument on shapes
// that do not fit together.
std::unique_ptr<StepDecoder> make_rnnsearch_decoder(const RnnSearchStepWeights& weights, const EncoderMemory& memory,
                                                    int64_t max_rows, StepPacking packing = StepPacking::Auto);

}  // namespace attn::models
