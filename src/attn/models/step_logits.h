// The last phases of every fused search step (rnnsearch_search.cpp,
// luong_search.cpp): logits = x W^T + b over the vocabulary, reduced tile by
// tile to each row's log-sum-exp and its k most probable tokens, so that the
// [N, V] logits never leave the L1-sized tile they are computed in.
//
// Legend: N decoder rows of a step, R feature size (the rows of x), V vocabulary, k tokens kept per row.
//
// The tiles are fixed (not per thread) and the threads' top-k lists merge
// exactly, so every row's result is independent of the other rows and of the
// thread count. Tokens are the k largest logits, ties by lower id.
//
// A vocabulary shortlist (decode/shortlist.h) restricts a search to some
// target tokens: restrict() prepares their rows of the weight alone, and the
// log-sum-exp and top k run over them (log p renormalised over the list).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/models/seq2seq.h"
#include "attn/nn/step_linear.h"

namespace attn::models::detail {

// The checks every fused search step makes of its arguments: k in [1, V], every
// row's sentence in [0, B), every previous token in [0, V). Throws
// std::invalid_argument "<who> decoder step: ..." naming the value.
void check_step_rows(const char* who, const std::vector<int64_t>& rows, const std::vector<int>& prev, int64_t k,
                     int64_t B, int64_t V);

// What a fused search step may report (StepDecoder::report_attention): its
// model's one map, kAttentionMap, or "" (none). Returns `map`; throws
// std::invalid_argument naming it and the one map otherwise.
const std::string& check_one_attention_map(const char* who, const std::string& map);

class StepLogits {
public:
  // w [V, R] (a StepLinear the caller keeps alive) prepared from `source`
  // [V, R] fp32 (read by restrict()), b [V] or null
  StepLogits(const nn::StepLinear* w, const float* b, Tensor source);

  // From now on only `tokens` (target ids, sorted, unique, in [0, V)); empty:
  // the whole vocabulary again. Their rows are prepared as w was (same type and
  // layout: each kept logit is exactly the full product's). Throws
  // std::invalid_argument for ids out of order or range.
  void restrict(const std::vector<int>& tokens);

  // Before a step's parallel region: buffers for N rows, k tokens, up to `threads` threads.
  void begin(int64_t N, int64_t k, int64_t threads, StepTop& out);
  // Inside the region, called by every thread (each an omp for):
  // 1. the tiles of x [N, R] (row stride ldx): their statistics and this thread's top k
  //    (x converted to the weight's type first, its rows split across the threads);
  void tiles(const float* x, int64_t ldx, int thread);
  // 2. each row's lse and its k best tokens into out.tokens / out.log_probs (log p = logit - lse).
  void merge(int thread, int threads, StepTop& out);

private:
  const nn::StepLinear& weight() const { return ids_.empty() ? *w_ : sub_w_; }
  const float* bias() const { return ids_.empty() ? b_ : (sub_b_.empty() ? nullptr : sub_b_.data()); }

  const nn::StepLinear* w_;
  const float* b_;
  Tensor source_;                 // [V, R] fp32: what w_ was prepared from
  std::vector<int> ids_;          // restrict()'s tokens ([] for all): the active weight's row -> token id
  Tensor sub_rows_;               // [ids, R]: their rows of source_, which sub_w_ may read in place
  nn::StepLinear sub_w_;          // sub_rows_ prepared as w_
  std::vector<float> sub_b_;      // [ids] their biases
  nn::StepInput in_;  // x in w_'s type's form (int8 / bf16: converted once per step)
  int64_t N_ = 0, k_ = 0, tiles_ = 0, V_ = 0;  // V_: the active weight's rows
  std::vector<float> part_max_, part_sum_;  // [N, tiles_]: max and sum exp(logit - max) of each tile
  // per thread and row: the k best logits of the thread's tiles; per thread: a merge buffer
  std::vector<int> top_tok_, merge_tok_;
  std::vector<int64_t> merge_ord_, top_n_;
  std::vector<float> top_val_, merge_val_;
};

}  // namespace attn::models::detail
