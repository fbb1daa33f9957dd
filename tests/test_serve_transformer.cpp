// `attn serve -m` on a Transformer run (serve_test_util.h's
// serve_transformer_run: 2 + 2 layers of 2 heads), as a process: GET /health
// lists the maps by layer and head and the encoder's self-attention maps;
// POST /v1/translate and /v1/explain answer with the map a request names (a
// head of a layer, a layer's mean) and by default with the last layer's mean,
// each [target, source] with every row summing to 1 over the source; the
// explanation carries the encoder's self-attention [source, source].
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "attn/data/toy_tasks.h"
#include "serve_test_util.h"

namespace attn::testing::serve_transformer_test {
namespace {

using nlohmann::json;

// One `attn serve -m RUN` per test binary run (the tests only read from it).
class ServeTransformer : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    process_ = new ServeProcess({"-m", serve_transformer_run(), "--port", "0", "--threads", "1"});
    port_ = listening_port(*process_);
  }
  static void TearDownTestSuite() {
    ::kill(process_->pid, SIGTERM);
    EXPECT_EQ(process_->wait_exit(30), 0);
    delete process_;
  }
  void SetUp() override { ASSERT_GT(port_, 0) << "attn serve did not start"; }

  // POST path with `body`: the status and the parsed answer.
  static std::pair<int, json> post(const std::string& path, const json& body) {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(60, 0);
    auto r = c.Post(path, body.dump(), "application/json");
    if (!r) return {-1, json()};
    return {r->status, json::parse(r->body)};
  }

  static inline ServeProcess* process_ = nullptr;
  static inline int port_ = -1;
};

const std::string kText = data::reversal_corpus(1, 51).src[0];

// weights [rows][S]: every row a distribution over the S source tokens.
void expect_rows_are_distributions(const json& weights, size_t rows, size_t S, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(weights.is_array());
  ASSERT_EQ(weights.size(), rows);
  for (const json& row : weights) {
    ASSERT_EQ(row.size(), S);
    double sum = 0;
    for (const json& w : row) {
      EXPECT_GE(w.get<double>(), 0.0);
      sum += w.get<double>();
    }
    EXPECT_NEAR(sum, 1.0, 1e-4);
  }
}

// The largest |a - b| over two [rows][cols] weight arrays of the same shape.
double max_diff(const json& a, const json& b) {
  double d = 0;
  for (size_t r = 0; r < a.size(); ++r)
    for (size_t c = 0; c < a[r].size(); ++c) d = std::max(d, std::abs(a[r][c].get<double>() - b[r][c].get<double>()));
  return d;
}

// The element-wise mean of two [rows][cols] weight arrays.
json mean_of(const json& a, const json& b) {
  json out = a;
  for (size_t r = 0; r < a.size(); ++r)
    for (size_t c = 0; c < a[r].size(); ++c) out[r][c] = (a[r][c].get<double>() + b[r][c].get<double>()) / 2;
  return out;
}

TEST_F(ServeTransformer, HealthListsTheMapsByLayerAndHead) {
  httplib::Client c("127.0.0.1", port_);
  auto r = c.Get("/health");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  const json h = json::parse(r->body);
  EXPECT_EQ(h["type"], "transformer");
  EXPECT_EQ(h["attention_maps"], json({"cross.layer2.mean", "cross.layer1.head1", "cross.layer1.head2", "cross.layer1.mean",
                                       "cross.layer2.head1", "cross.layer2.head2"}));
  EXPECT_EQ(h["encoder_attention_maps"], json({"self.layer2.mean", "self.layer1.head1", "self.layer1.head2",
                                               "self.layer1.mean", "self.layer2.head1", "self.layer2.head2"}));
}

// /v1/translate's alignments for each map: [target (+ EOS), source], rows
// summing to 1; the default is the last layer's mean; a layer's mean is the
// mean of its heads, and the heads differ.
TEST_F(ServeTransformer, TranslateAnswersTheNamedMap) {
  std::map<std::string, json> by_map;
  for (const std::string map : {"", "cross.layer2.mean", "cross.layer1.head1", "cross.layer1.head2", "cross.layer1.mean"}) {
    json body = {{"text", kText}, {"beam", 2}, {"alignments", true}};
    if (!map.empty()) body["attention_map"] = map;
    const auto [status, a] = post("/v1/translate", body);
    ASSERT_EQ(status, 200) << map << ": " << a.dump();
    const size_t T = a["tgt_tokens"].size(), S = a["src_tokens"].size();
    ASSERT_GT(S, 0u);
    const size_t rows = a["weights"].size();
    EXPECT_TRUE(rows == T || rows == T + 1) << map << ": " << rows << " rows for " << T << " target tokens";
    expect_rows_are_distributions(a["weights"], rows, S, "translate " + map);
    by_map[map] = a;
  }
  EXPECT_EQ(by_map[""]["translation"], by_map["cross.layer1.head1"]["translation"]);  // the map never changes the search
  EXPECT_EQ(by_map[""]["weights"], by_map["cross.layer2.mean"]["weights"]);
  EXPECT_LT(max_diff(by_map["cross.layer1.mean"]["weights"],
                     mean_of(by_map["cross.layer1.head1"]["weights"], by_map["cross.layer1.head2"]["weights"])),
            1e-5);
  EXPECT_GT(max_diff(by_map["cross.layer1.head1"]["weights"], by_map["cross.layer1.head2"]["weights"]), 1e-3);

  const auto [status, bad] = post("/v1/translate", {{"text", kText}, {"alignments", true}, {"attention_map", "cross.layer3.mean"}});
  EXPECT_EQ(status, 400);
  EXPECT_EQ(bad["field"], "attention_map");
  EXPECT_NE(bad["error"].get<std::string>().find("unknown attention map \"cross.layer3.mean\""), std::string::npos) << bad;
}

// /v1/explain: the steps' weights are the named map's (the same as
// /v1/translate's for the same beam), "attention_map" names it, and
// "self_attention" is the encoder map asked for, [source][source].
TEST_F(ServeTransformer, ExplainAnswersTheNamedMapAndTheEncoderSelfAttention) {
  const auto [ts, tr] = post("/v1/translate", {{"text", kText}, {"beam", 1}, {"alignments", true},
                                                {"attention_map", "cross.layer1.head2"}});
  ASSERT_EQ(ts, 200) << tr;
  const auto [status, e] = post("/v1/explain", {{"text", kText}, {"attention_map", "cross.layer1.head2"},
                                                 {"self_attention_map", "self.layer1.head1"}});
  ASSERT_EQ(status, 200) << e;
  EXPECT_EQ(e["model"], "transformer");
  EXPECT_EQ(e["attention_map"], "cross.layer1.head2");
  const size_t S = e["src_tokens"].size();
  ASSERT_EQ(e["steps"].size(), tr["weights"].size());
  json steps = json::array();
  for (const json& s : e["steps"]) steps.push_back(s["weights"]);
  expect_rows_are_distributions(steps, e["steps"].size(), S, "explain steps");
  EXPECT_LT(max_diff(steps, tr["weights"]), 1e-5);
  ASSERT_TRUE(e.contains("self_attention"));
  EXPECT_EQ(e["self_attention"]["map"], "self.layer1.head1");
  expect_rows_are_distributions(e["self_attention"]["weights"], S, S, "self.layer1.head1");

  // the defaults: the last layer's mean, of the decoder's maps and of the encoder's
  const auto [ds, d] = post("/v1/explain", {{"text", kText}});
  ASSERT_EQ(ds, 200) << d;
  EXPECT_EQ(d["attention_map"], "cross.layer2.mean");
  EXPECT_EQ(d["self_attention"]["map"], "self.layer2.mean");
  expect_rows_are_distributions(d["self_attention"]["weights"], S, S, "self.layer2.mean");
  json heads[2];
  for (int h = 0; h < 2; ++h) {
    const auto [hs, x] = post("/v1/explain", {{"text", kText}, {"self_attention_map", "self.layer2.head" + std::to_string(h + 1)}});
    ASSERT_EQ(hs, 200) << x;
    heads[h] = x["self_attention"]["weights"];
  }
  EXPECT_LT(max_diff(d["self_attention"]["weights"], mean_of(heads[0], heads[1])), 1e-5);
  EXPECT_GT(max_diff(heads[0], heads[1]), 1e-3);

  const auto [bs, bad] = post("/v1/explain", {{"text", kText}, {"self_attention_map", "cross.layer1.mean"}});
  EXPECT_EQ(bs, 400);
  EXPECT_EQ(bad["field"], "self_attention_map");
  EXPECT_NE(bad["error"].get<std::string>().find("unknown encoder attention map \"cross.layer1.mean\""), std::string::npos)
      << bad;
}

}  // namespace
}  // namespace attn::testing::serve_transformer_test
