// `attn bench train decode --model luong|transformer` (src/attn/bench/bench_mt.cpp)
// runs attn's model and its PyTorch peer (bench/peers/torch_luong.py,
// torch_transformer.py) on the same shape: a smoke run at batch 2, one timed
// call, whose figures are not looked at, only that both sides print their lines
// for the same model (equal parameter counts and target tokens) and that nothing
// failed; for the Transformer also the arithmetic (mt_flops.h), held to a count
// made GEMM by GEMM, and the sgemm and rates lines.
// (Named "Torch": it starts python, so it runs with the parity tests.)
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/bench/mt_flops.h"
#include "train_test_util.h"

namespace attn::testing::bench_mt_test {
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

// The FLOPs of the products of a Transformer's forward pass, listed one product
// at a time (2 m n k each) rather than by mt_flops.h's closed forms: sentences
// of source lengths `src` (targets src + 1) for training; for a search, steps[i]
// steps of `rows` rows each, the self-attention over 1 .. steps[i] positions.
struct GemmCount {
  const bench::TransformerDims& d;
  bool with_attention = true;  // false: only the products that run through sgemm (mt_flops.h's Product lists)
  double total = 0;
  void gemm(double m, double n, double k) { total += 2 * m * n * k; }
  void attention(double q, double k) {  // Q K^T and P V, all heads
    if (with_attention) gemm(q, k, d.E), gemm(q, d.E, k);
  }
  void encoder(double s) {
    for (int l = 0; l < d.enc_layers; ++l) gemm(s, 3 * d.E, d.E), attention(s, s), gemm(s, d.E, d.E), feed_forward(s);
  }
  void feed_forward(double n) { gemm(n, d.F, d.E), gemm(n, d.E, d.F); }
  // q query positions per row over `self` positions of their own and the source's s
  void decoder(double q, double self, double s) {
    for (int l = 0; l < d.dec_layers; ++l) {
      gemm(q, 3 * d.E, d.E), attention(q, self), gemm(q, d.E, d.E);  // self-attention
      gemm(q, d.E, d.E), attention(q, s), gemm(q, d.E, d.E);         // cross-attention (keys, values apart)
      feed_forward(q);
    }
    gemm(q, d.V, d.E);
  }
};

TEST(MtFlops, TrainingAndSearchEqualTheProductsCountedOneByOne) {
  const bench::TransformerDims tiny{2, 3, 5, 1, 1}, preset{256, 1024, 8000, 3, 3};
  // by hand for tiny, sources {1, 2}: forward 208 (encoder) + 576 (decoder) + 100 (output) = 884, x 3;
  // the search with steps {2, 3} on 2 rows: 208 + 464 + 776
  EXPECT_EQ(bench::transformer_train_flops(tiny, {1, 2}), 2652.0);
  EXPECT_EQ(bench::transformer_search_flops(tiny, {1, 2}, {2, 3}, 2), 1448.0);
  for (const bench::TransformerDims& d : {tiny, preset}) {
    const std::vector<int64_t> src = {1, 2, 8, 15, 20}, steps = {2, 3, 17, 27, 35};
    GemmCount train{d}, search{d};
    for (int64_t s : src) {
      train.encoder(double(s));
      for (int l = 0; l < d.dec_layers; ++l) train.gemm(double(s), 2 * d.E, d.E);  // the memory's keys and values
      train.decoder(double(s + 1), double(s + 1), double(s));
    }
    EXPECT_DOUBLE_EQ(bench::transformer_train_flops(d, src), 3 * train.total);
    for (size_t i = 0; i < src.size(); ++i) {
      search.encoder(double(src[i]));
      for (int l = 0; l < d.dec_layers; ++l) search.gemm(double(src[i]), 2 * d.E, d.E);
      for (int64_t t = 1; t <= steps[i]; ++t) search.decoder(3, double(t), double(src[i]));  // 3 rows
    }
    EXPECT_DOUBLE_EQ(bench::transformer_search_flops(d, src, steps, 3), search.total);
  }
}

double flops_of(const std::vector<bench::Product>& products) {
  double f = 0;
  for (const bench::Product& p : products) f += 2.0 * double(p.m) * double(p.n) * double(p.k) * double(p.count);
  return f;
}

TEST(MtFlops, ProductListsHoldEveryProductButAttentionsScores) {
  const bench::TransformerDims tiny{2, 3, 5, 1, 1}, preset{256, 1024, 8000, 3, 3};
  for (const bench::TransformerDims& d : {tiny, preset}) {
    // 4 sentences of 6 source and 7 target positions: no padding, so the lists equal the count without attention
    GemmCount train{d, false}, step{d, false};
    for (int i = 0; i < 4; ++i) {
      train.encoder(6);
      for (int l = 0; l < d.dec_layers; ++l) train.gemm(6, 2 * d.E, d.E);
      train.decoder(7, 7, 6);
    }
    EXPECT_DOUBLE_EQ(flops_of(bench::transformer_train_products(d, 4 * 6, 4 * 7)), 3 * train.total);
    step.decoder(5, 1, 1);  // one step of 5 rows
    EXPECT_DOUBLE_EQ(flops_of(bench::transformer_step_products(d, 5)), step.total);
  }
  // a backward product has its forward's size in another order: dA [m, k] = dC [m, n] B^T, dB [k, n] = A^T dC
  const auto p = bench::transformer_train_products(tiny, 1, 1);
  EXPECT_EQ(p[1].m, p[0].m);
  EXPECT_EQ(p[1].n, p[0].k);
  EXPECT_EQ(p[2].m, p[0].k);
  EXPECT_EQ(p[2].n, p[0].n);
}

// The lines of a run, by their "bench" and "impl" fields ("" when absent)
std::multimap<std::string, nlohmann::json> lines_by_kind(const std::string& out) {
  std::multimap<std::string, nlohmann::json> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    lines.emplace(j.value("bench", "") + "/" + j.value("impl", ""), j);
  }
  return lines;
}

TEST(TorchPeerBench, TransformerTrainAndDecodeRunBesideTheSameShapedPeer) {
  TempDir dir("bench_transformer");
  const CommandResult r = run_attn(
      "bench train decode --model transformer --batch 2 --decode-batch 1 --beam 1 5 --repeats 1 --threads 1 "
      "--lengths uniform",
      dir.path);
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_by_kind(r.out);
  for (const auto& [kind, j] : lines) EXPECT_FALSE(j.contains("error")) << j.dump();
  ASSERT_EQ(lines.count("train/attn"), 1u) << r.out;
  ASSERT_EQ(lines.count("train/torch"), 1u) << r.out;
  ASSERT_EQ(lines.count("decode/attn"), 2u) << r.out;
  ASSERT_EQ(lines.count("decode/torch"), 2u) << r.out;
  // per figure (train, decode beam 1, beam 5): the output layer's shape, and 2048 right after it
  EXPECT_EQ(lines.count("sgemm/attn"), 6u) << r.out;
  EXPECT_EQ(lines.count("sgemm_products/attn"), 3u) << r.out;  // the step's products, per figure
  ASSERT_EQ(lines.count("train_rates/"), 1u) << r.out;
  ASSERT_EQ(lines.count("decode_rates/"), 2u) << r.out;

  const bench::TransformerDims dims{256, 1024, 8000, 3, 3};
  const nlohmann::json& train = lines.find("train/attn")->second;
  const nlohmann::json& peer = lines.find("train/torch")->second;
  EXPECT_EQ(train.value("params", int64_t(0)), 7586624) << train.dump();  // the 7.6M of bench_mt.cpp
  EXPECT_EQ(peer.value("params", int64_t(-1)), train.value("params", int64_t(0)));
  EXPECT_EQ(peer.value("tgt_tokens", int64_t(-1)), train.value("tgt_tokens", int64_t(0)));
  EXPECT_EQ(train.value("flops", 0.0), bench::transformer_train_flops(dims, {14, 14}));  // --lengths uniform
  EXPECT_EQ(train.value("tgt_tokens", int64_t(0)), 30);
  EXPECT_EQ(peer.value("lengths", ""), "uniform");
  EXPECT_GT(train.value("gflops", 0.0), 0.0);
  EXPECT_GT(train.value("pool_peak_bytes", int64_t(0)), 0);
  EXPECT_GT(peer.value("peak_rss_delta_bytes", int64_t(0)), 0);
  for (auto [it, end] = lines.equal_range("decode/attn"); it != end; ++it) {
    const nlohmann::json& j = it->second;
    const int64_t beam = j.value("beam", 0), steps = j.value("row_steps", int64_t(0)) / beam;
    EXPECT_GT(steps, 0) << j.dump();
    EXPECT_EQ(j.value("flops", 0.0), bench::transformer_search_flops(dims, {14}, {steps}, beam)) << j.dump();
    EXPECT_GT(j.value("peak_bytes_per_sent", 0.0), 0.0) << j.dump();
  }
  for (auto [it, end] = lines.equal_range("decode/torch"); it != end; ++it) {
    EXPECT_GT(it->second.value("sents_per_s", 0.0), 0.0) << it->second.dump();
    EXPECT_TRUE(it->second.contains("peak_bytes_per_sent")) << it->second.dump();
  }
  for (const char* kind : {"train_rates/", "decode_rates/"})
    for (auto [it, end] = lines.equal_range(kind); it != end; ++it)
      for (const char* field :
           {"speedup", "fraction_of_sgemm_2048", "fraction_of_sgemm_shape", "fraction_of_sgemm_products"})
        EXPECT_GT(it->second.value(field, 0.0), 0.0) << field << " " << it->second.dump();
  for (auto [it, end] = lines.equal_range("decode_rates/"); it != end; ++it)
    EXPECT_GT(it->second.value("speedup_per_row_step", 0.0), 0.0) << it->second.dump();
}

}  // namespace
}  // namespace attn::testing::bench_mt_test
