// What a search needs from a step's distribution over the vocabulary: the
// log-sum-exp of each row of logits, and the k most probable tokens with
// their log-probabilities. Greedy search keeps one token and beam search K + 1
// per row, so log p is never materialised for the whole vocabulary (at beam
// 5, batch 64 that was a [320, 8000] tensor written and re-read per step).
//
// log_sum_exp_row is log_softmax_rows' arithmetic (output_loss.h): log p_v =
// x_v - lse in float with lse = max + log(sum exp(x - max)), so a token's
// log-probability is bit-identical whichever of the two computed it.
//
// Compiled per instruction set (vocab_topk.cpp is an ISA source, kernels/dispatch.h):
// the functions below call the build for cpu::isa(); ISA sources call their own
// build's directly, and use the list's insert / enters rule of vocab_topk_list.h.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::models {

// A running list of the k largest (value, token) pairs, in the order value
// descending, ties by lower token: tokens must be offered in increasing order
// (a tie then goes after the earlier token). Storage is the caller's. A plain
// aggregate (a kernel argument): value y enters the list when n < k or
// y > values[n - 1].
struct TopKList {
  int* tokens;    // [k]
  float* values;  // [k]
  int64_t k;      // >= 1
  int64_t n = 0;  // entries filled so far
};

ATTN_ISA_DECLARE(float log_sum_exp_row(const float* x, int64_t V);
                 void top_k_add(TopKList& list, const float* x, int64_t count, int first_token, float shift);
                 void top_k_row(const float* x, int64_t V, float shift, int64_t k, int* tokens, float* values);)

// log sum_v exp(x[v]) of one row x [V], max-subtracted. V >= 1.
inline float log_sum_exp_row(const float* x, int64_t V) { ATTN_ISA_CALL(log_sum_exp_row, x, V); }

// Offers x[j] - shift for tokens first_token + j, j < count, to `list`; only
// values above the list's current last leave the vector loop.
inline void top_k_add(TopKList& list, const float* x, int64_t count, int first_token, float shift = 0.0f) {
  ATTN_ISA_CALL(top_k_add, list, x, count, first_token, shift);
}

// The k (1 <= k <= V) largest values y_v = x[v] - shift of one row x [V], value
// descending, ties by lower v (so k = 1 is the first maximum): tokens [k] get
// the v, values [k] the y_v.
inline void top_k_row(const float* x, int64_t V, float shift, int64_t k, int* tokens, float* values) {
  ATTN_ISA_CALL(top_k_row, x, V, shift, k, tokens, values);
}

}  // namespace attn::models
