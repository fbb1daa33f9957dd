// decode/attention_stats.h: entropy, max weight and copy alignment on hand-made rows.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "attn/decode/attention_stats.h"

namespace attn::testing::attention_stats_test {
namespace {

TEST(AttentionStats, EntropyAndCopyAlignmentOfKnownRows) {
  decode::AttentionStats s;
  const std::vector<std::string> src = {"\xE2\x96\x81Zwei", "\xE2\x96\x81Hunde", "\xE2\x96\x81Paris", "."};
  // rows: "▁Two" uniform; "▁Paris" one-hot on its copy; "." (punctuation: no copy) half-half;
  // EOS: all 0 (a local window past the sentence)
  s.add({0.25f, 0.25f, 0.25f, 0.25f, 0, 0, 1, 0, 0, 0, 0.5f, 0.5f, 0, 0, 0, 0}, src,
        {"\xE2\x96\x81Two", "\xE2\x96\x81Paris", "."});
  EXPECT_EQ(s.steps, 4);
  EXPECT_NEAR(s.entropy_sum, std::log(4.0) + std::log(2.0), 1e-6);
  EXPECT_NEAR(s.max_weight_sum, 0.25 + 1 + 0.5, 1e-6);
  EXPECT_EQ(s.copy_steps, 1);
  EXPECT_EQ(s.copy_hits, 1);
  // a copy whose argmax misses it, a piece twice in the source (no known position), an
  // unfinished hypothesis (no EOS row), and a local-p row summing to 0.5 (renormalised)
  s.add({0.5f, 0, 0, 0, 0, 0, 0.25f, 0.25f, 0, 0}, {"\xE2\x96\x81Paris", "\xE2\x96\x81Hund", "\xE2\x96\x81Hund", "x", "y"},
        {"\xE2\x96\x81Paris", "\xE2\x96\x81Hund"});
  EXPECT_EQ(s.steps, 6);
  EXPECT_NEAR(s.entropy_sum, std::log(4.0) + std::log(2.0) + 0 + std::log(2.0), 1e-6);
  EXPECT_EQ(s.copy_steps, 2);
  EXPECT_EQ(s.copy_hits, 2);  // row 0: argmax 0 is "▁Paris"
  s.add({0, 1, 0.5f, 0}, {"\xE2\x96\x81Rom", "\xE2\x96\x81" "Berlin"}, {"\xE2\x96\x81Rom", "\xE2\x96\x81" "Berlin"});
  EXPECT_EQ(s.copy_steps, 4);
  EXPECT_EQ(s.copy_hits, 2);  // both rows look at the other city
  const auto j = nlohmann::json::parse(s.json());
  EXPECT_EQ(j["steps"], 8);
  EXPECT_NEAR(j["copy_argmax_share"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(j["mean_entropy"].get<double>(), s.entropy_sum / 8, 1e-9);
  EXPECT_THROW(s.add({0.5f, 0.5f, 1}, {"a", "b"}, {"c"}), std::invalid_argument);  // 3 weights for 2 sources
  EXPECT_THROW(s.add({1, 0, 1, 0, 1, 0}, {"a", "b"}, {"c"}), std::invalid_argument);  // 3 rows for 1 piece
}

}  // namespace
}  // namespace attn::testing::attention_stats_test
