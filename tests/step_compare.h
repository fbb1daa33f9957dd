// Two step decoders of one model run side by side: the comparisons the
// compute-type, shortlist and captioner tests make of a decoder against a
// reference (fp32's, or the unrestricted one).
//
// Legend: N rows, V vocabulary, n = the list's size, T steps.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "attn/models/seq2seq.h"

namespace attn::testing {

// Row i of a step's answer for k tokens a row, as log p by token id [V] (0 for tokens not given).
inline std::vector<double> log_probs_by_token(const models::StepTop& top, int64_t i, int64_t k, int64_t V) {
  std::vector<double> lp(static_cast<size_t>(V));
  for (int64_t j = 0; j < k; ++j) lp[size_t(top.tokens[size_t(i * k + j)])] = top.log_probs[size_t(i * k + j)];
  return lp;
}

// Steps `ref` and `dec` T times from `initial` (the rows' states; each decoder
// starts its own copy), both asked for all V tokens of each of the N = rows.size()
// rows and fed ref's best token; returns the largest |log p_dec - log p_ref|
// of the same token over every token, row and step.
inline double max_log_prob_gap(models::StepDecoder& ref, models::StepDecoder& dec, const models::DecoderState& initial,
                               const std::vector<int64_t>& rows, int64_t V, int64_t T, int bos) {
  const int64_t N = int64_t(rows.size());
  models::DecoderState s_ref = ref.start(initial, N, T), s = dec.start(initial, N, T);
  std::vector<int> prev(size_t(N), bos);
  double gap = 0;
  for (int64_t t = 0; t < T; ++t) {
    const models::StepTop want = ref.step(rows, s_ref, prev, V, t);  // a copy: the next call reuses it
    const models::StepTop& got = dec.step(rows, s, prev, V, t);
    for (int64_t i = 0; i < N; ++i) {
      const std::vector<double> lp = log_probs_by_token(got, i, V, V);
      for (int64_t j = 0; j < V; ++j)
        gap = std::max(gap, std::fabs(lp[size_t(want.tokens[size_t(i * V + j)])] -
                                      double(want.log_probs[size_t(i * V + j)])));
      prev[size_t(i)] = want.tokens[size_t(i * V)];
    }
  }
  return gap;
}

// Steps `full` and `part` (restricted to `list`, sorted) T times from
// `initial`, both fed part's best token; expects part to give each token of
// the list once and nothing else; returns the largest
// |log p_part - (log p_full - log sum_list p_full)| over the list, rows and steps.
inline double max_renormalised_gap(models::StepDecoder& full, models::StepDecoder& part,
                                   const models::DecoderState& initial, const std::vector<int64_t>& rows, int64_t V,
                                   const std::vector<int>& list, int64_t T, int bos) {
  const int64_t N = int64_t(rows.size()), n = int64_t(list.size());
  models::DecoderState s_full = full.start(initial, N, T), s_part = part.start(initial, N, T);
  std::vector<int> prev(size_t(N), bos);
  double gap = 0;
  for (int64_t t = 0; t < T; ++t) {
    const models::StepTop want = full.step(rows, s_full, prev, V, t);  // a copy: the next call reuses it
    const models::StepTop& got = part.step(rows, s_part, prev, n, t);
    for (int64_t i = 0; i < N; ++i) {
      const std::vector<double> lp = log_probs_by_token(want, i, V, V);
      double sum = 0;
      for (int id : list) sum += std::exp(lp[size_t(id)]);
      std::set<int> seen;
      for (int64_t j = 0; j < n; ++j) {
        const int id = got.tokens[size_t(i * n + j)];
        EXPECT_TRUE(std::binary_search(list.begin(), list.end(), id)) << id << " is not in the list";
        seen.insert(id);
        gap = std::max(gap, std::fabs(double(got.log_probs[size_t(i * n + j)]) - (lp[size_t(id)] - std::log(sum))));
      }
      EXPECT_EQ(int64_t(seen.size()), n) << "each token of the list once";
      prev[size_t(i)] = got.tokens[size_t(i * n)];
    }
  }
  return gap;
}

}  // namespace attn::testing
