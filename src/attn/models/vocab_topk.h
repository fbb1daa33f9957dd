// What a search needs from a step's distribution over the vocabulary: the
// log-sum-exp of each row of logits, and the k most probable tokens with
// their log-probabilities. Greedy search keeps one token and beam search 2K
// per row, so log p is never materialised for the whole vocabulary (at beam
// 5, batch 64 that was a [320, 8000] tensor written and re-read per step).
//
// The arithmetic is log_softmax_rows' (output_loss.h): log p_v = x_v - lse in
// float, lse = max + log(sum exp(x - max)), so a token's log-probability is
// bit-identical whichever of the two computed it.
#pragma once
#include <cstdint>

namespace attn::models {

// log sum_v exp(x[v]) of one row x [V], max-subtracted. V >= 1.
float log_sum_exp_row(const float* x, int64_t V);

// The k (1 <= k <= V) largest values y_v = x[v] - shift of one row x [V], in
// the order value descending, ties by lower v (so k = 1 is the first maximum):
// tokens [k] get the v, values [k] the y_v. One pass; only values above the
// current k-th best leave the vector loop.
void top_k_row(const float* x, int64_t V, float shift, int64_t k, int* tokens, float* values);

}  // namespace attn::models
