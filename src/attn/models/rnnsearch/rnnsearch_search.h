// RNNsearch's decoder step for greedy and beam search: RnnSearch::step() fused
// into one parallel region per step, without autograd.
//
// Legend: B sentences (rows of the encoder memory), N decoder rows of a step
// (<= max_rows), S source length, E embedding, Dv annotation size, A
// attention size, Hd decoder size, G = 3 Hd, R readout size, V target
// vocabulary, k tokens kept per row.
//
// Prepared once for many searches (prepare_rnnsearch_decoder): the weights in
// the layout the products read, and the embedding's share of two products
// folded into lookup tables, since the previous token y is one of V ids:
//   T_ih[y] = E[y] W_ih[:, :E]^T + b_ih        [V, G]
//   T_o[y]  = E[y] W_o[:, Hd+Dv:]^T + b_o      [V, R]
// (kMaxFoldedFloats bounds them; above it the products run per step).
//
// Per step, with s the previous state ("s" of the DecoderState, [N, Hd], updated
// in place) and y the previous token of each row:
//   gx = T_ih[y];  t = T_o[y];  qp = s W_a^T;  gh = s W_hh^T     (rows, then columns of both products)
//   a = softmax_j(v^T tanh(qp + U h_j + b_U))                    (rows; the sentence's cached keys)
//   c = sum_j a_j h_j;  gx += c W_ih[:, E:]^T;  t += c W_o[:, Hd:Hd+Dv]^T    (the context's products)
//   s' = GRU gates(gx, gh + b_hh, s)                             (hidden units)
//   t = tanh(t + s' W_o[:, :Hd]^T)                               (columns, tanh on the fly)
//   logits = t W_y^T + b_y, in tiles of rows x 128 logits        (columns)
//     per tile: its max and sum exp(logit - max), and a running top k of each row
//   lse = combined over the tiles; the k best logits, log p = logit - lse  (rows)
// The context's products are linear in c, so c W^T = sum_j a_j (h_j W^T): with
// the values multiplied once per search, P = h [W_ih[:, E:]; W_o[:, Hd:Hd+Dv]]^T
// ([L, G + R] per sentence, one GEMM), a row adds sum_j a_j P_j to gx and t,
// S (G + R) multiply-adds instead of Dv (G + R) and never forms c
// (ContextProducts::Folded; for the lean model, Dv 512 and S ~20, a fifth of
// a step's multiply-adds).
// the same equations as RnnSearch::step() (tests/test_search_step.cpp holds
// them equal up to rounding), but:
//  - each product reads weights prepared once (nn/step_linear.h): row-major
//    for a few rows, packed panels for many, never re-packed per step, and
//    the folded tables take 10% of a step's multiply-adds off (lean model);
//  - the phases run in one OpenMP region separated by barriers, instead of
//    a dozen ops with a team wake-up and a fresh output tensor each;
//  - buffers are allocated once per search for max_rows rows, and s' is
//    written over s in the search's state (allocated once by start());
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
#include "attn/models/step_packing.h"

namespace attn::models {

struct RnnSearchStepWeights {
  Tensor embed;         // [V, E] target embedding
  Tensor W_a, v;        // [A, Hd] query projection, [A] score vector
  Tensor w_ih, w_hh;    // [3Hd, E + Dv] (columns: embedding, then context), [3Hd, Hd]
  Tensor b_ih, b_hh;    // [3Hd] each, or undefined (zeros)
  Tensor w_o, b_o;      // [R, Hd + Dv + E] readout (columns: s', c, emb), [R] or undefined
  Tensor w_y, b_y;      // [V, R] vocabulary projection, [V] or undefined
};

// Checks the weights' shapes (std::invalid_argument) and prepares them: the
// result holds copies, so it stays valid whatever happens to the parameters
// afterwards (and goes stale when they change). fold = false keeps the
// embedding's products per step (tests compare both).
std::shared_ptr<const PreparedDecoder> prepare_rnnsearch_decoder(const RnnSearchStepWeights& weights,
                                                                 StepLayout layout, bool fold = true);

// How a decoder runs the context's products (see above): Folded multiplies the
// values once when the decoder is made, PerStep multiplies c every step, Auto
// folds when 2 S <= Dv (a step then costs at most half; the GEMM over the
// values costs about as much as two steps of one row per sentence).
enum class ContextProducts { Auto, Folded, PerStep };

// A decoder over `memory` (keys [B, S, A] = U h + b_U, values [B, S, Dv],
// lengths [B] as RnnSearch::encode() returns them) for at most max_rows rows
// per step. Throws std::invalid_argument when the memory does not fit the
// weights or `prepared` is not prepare_rnnsearch_decoder()'s.
std::unique_ptr<StepDecoder> make_rnnsearch_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                    const EncoderMemory& memory, int64_t max_rows,
                                                    ContextProducts context = ContextProducts::Auto);

}  // namespace attn::models
