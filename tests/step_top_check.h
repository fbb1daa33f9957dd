// The check every fused search step's test makes of its top k (test_search_step.cpp,
// test_luong_search.cpp): each row's k tokens carry their reference log-probability,
// are the k best of the row (no better token missed) and come best first.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

#include "attn/models/seq2seq.h"

namespace attn::testing {

// out: the fused step's StepTop of N rows; log_probs [N, V]: the composable step's.
inline void expect_top_k_of(const models::StepTop& out, const Tensor& log_probs, int64_t k, float tol = 1e-5f) {
  const int64_t N = log_probs.size(0), V = log_probs.size(1);
  ASSERT_EQ(int64_t(out.tokens.size()), N * k);
  ASSERT_EQ(int64_t(out.log_probs.size()), N * k);
  for (int64_t i = 0; i < N; ++i) {
    const float* lp = log_probs.data() + i * V;
    std::vector<float> sorted(lp, lp + V);
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (int64_t j = 0; j < k; ++j) {
      const float got = out.log_probs[size_t(i * k + j)];
      EXPECT_NEAR(got, lp[out.tokens[size_t(i * k + j)]], tol) << "row " << i << " rank " << j;
      EXPECT_NEAR(got, sorted[size_t(j)], tol) << "row " << i << " rank " << j;  // no better token missed
      if (j) EXPECT_GE(out.log_probs[size_t(i * k + j - 1)], got) << "row " << i << " rank " << j;
    }
  }
}

}  // namespace attn::testing
