// `attn bench train decode --model luong` (src/attn/bench/bench_mt.cpp) runs
// attn's luong and its PyTorch peer (bench/peers/torch_luong.py) on the same
// shape: a smoke run at batch 2, one timed call, whose figures are not looked
// at, only that both sides print their lines for the same model (equal
// parameter counts and target tokens) and that nothing failed.
// (Named "Torch": it starts python, so it runs with the parity tests.)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "train_test_util.h"

namespace attn::testing {
namespace {

TEST(TorchPeerBench, LuongTrainAndDecodeRunBesideTheSameShapedPeer) {
  TempDir dir("bench_luong");
  const CommandResult r = run_attn(
      "bench train decode --model luong --batch 2 --decode-batch 1 --beam 1 5 --repeats 1 --threads 1", dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<nlohmann::json> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
  // train attn, train torch, then per beam (1, 5) decode attn, decode torch
  ASSERT_EQ(lines.size(), 6u) << r.out << r.err;
  const char* benches[] = {"train", "train", "decode", "decode", "decode", "decode"};
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json& j = lines[i];
    EXPECT_FALSE(j.contains("error")) << j.dump();
    EXPECT_EQ(j.value("bench", ""), benches[i]) << j.dump();
    EXPECT_EQ(j.value("impl", ""), i % 2 ? "torch" : "attn") << j.dump();
    EXPECT_EQ(j.value("model", ""), "luong") << j.dump();
    EXPECT_EQ(j.value("batch", 0), i < 2 ? 2 : 1) << j.dump();
    if (i >= 2) {
      EXPECT_EQ(j.value("beam", 0), i < 4 ? 1 : 5) << j.dump();
      EXPECT_GT(j.value("sents_per_s", 0.0), 0.0) << j.dump();
    }
  }
  // the same model on both sides: 12.9M parameters (bench_mt.cpp), the same batch
  EXPECT_EQ(lines[0].value("params", int64_t(0)), 12927296) << lines[0].dump();
  EXPECT_EQ(lines[1].value("params", int64_t(-1)), lines[0].value("params", int64_t(0)));
  EXPECT_EQ(lines[1].value("tgt_tokens", int64_t(-1)), lines[0].value("tgt_tokens", int64_t(0)));
  EXPECT_GT(lines[0].value("tgt_tokens_per_s", 0.0), 0.0);
  EXPECT_GT(lines[1].value("tgt_tokens_per_s", 0.0), 0.0);
}

}  // namespace
}  // namespace attn::testing
