// `attn serve` in this process, against a tiny trained model: every route,
// every error status, the micro-batcher under concurrent clients (each gets
// the answer it gets alone), the full queue, and a slow client's timeout.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <future>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>

#include "attn/data/toy_tasks.h"
#include "attn/decode/translator.h"
#include "attn/serve/request.h"
#include "serve_test_util.h"
#include "train_test_util.h"

namespace attn::testing::serve_test {
namespace {

using nlohmann::json;

json body_of(const httplib::Result& r) { return json::parse(r->body); }

serve::ServerOptions options() {
  serve::ServerOptions o;
  o.threads = 1;
  return o;
}

// The shared runs' builder lets go of its lock when building throws: a second
// call in the same process builds instead of waiting on the first call's lock
// (it would hang until ctest's timeout).
TEST(Serve, MakeOnceReleasesItsLockWhenMakeThrows) {
  const std::string dir = std::string(ATTN_BINARY_DIR) + "/make_once_throws_" + std::to_string(::getpid());
  EXPECT_THROW(make_once(dir, "done", [](const std::string&) -> std::string { throw std::runtime_error("no"); }),
               std::runtime_error);
  const std::string made = make_once(dir, "done", [](const std::string& tmp) {
    std::ofstream(tmp + "/done") << "ok";
    return tmp;
  });
  EXPECT_TRUE(std::filesystem::exists(made + "/done"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove(dir + ".lock");
}

TEST(Serve, HealthWebPageAndMetrics) {
  LiveServer s(serve_toy_model(), [] {
    auto o = options();
    o.model_name = "toy";
    return o;
  }());
  auto c = s.client();
  auto health = c->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const json h = body_of(health);
  EXPECT_EQ(h["status"], "ok");
  EXPECT_EQ(h["model"], "toy");
  EXPECT_EQ(h["type"], "rnnsearch");
  EXPECT_EQ(h["src_vocab"], serve_toy_model().src_vocab->size());
  EXPECT_EQ(h["explain"], false);
  EXPECT_EQ(h["attention_maps"], json::array({"attention"}));
  // the page is the bytes of web/index.html, embedded at build time
  const std::string page = read_bytes(std::string(ATTN_TEST_DIR) + "/../web/index.html");
  ASSERT_FALSE(page.empty());
  for (const char* path : {"/", "/index.html"}) {
    auto r = c->Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->body, page) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), "text/html; charset=utf-8") << path;
  }
  ASSERT_TRUE(post_json(*c, "/v1/translate", R"({"text": "red cat two ."})"));
  ASSERT_TRUE(post_json(*c, "/v1/translate", R"({"texts": ["red cat .", "two dogs ."]})"));
  ASSERT_TRUE(c->Get("/nothing-here"));
  auto m = c->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string& t = m->body;
  EXPECT_EQ(metric(t, R"(attn_http_requests_total{path="/health",status="200"})"), 1) << t;
  EXPECT_EQ(metric(t, R"(attn_http_requests_total{path="/",status="200"})"), 1) << t;
  EXPECT_EQ(metric(t, R"(attn_http_requests_total{path="/v1/translate",status="200"})"), 2) << t;
  EXPECT_EQ(metric(t, R"(attn_http_requests_total{path="other",status="404"})"), 1) << t;
  EXPECT_EQ(metric(t, R"(attn_http_request_duration_seconds_count{path="/v1/translate"})"), 2) << t;
  EXPECT_GT(metric(t, R"(attn_http_request_duration_seconds_sum{path="/v1/translate"})"), 0) << t;
  // two batches, of one and of two sentences
  EXPECT_EQ(metric(t, "attn_batch_sentences_count"), 2) << t;
  EXPECT_EQ(metric(t, "attn_batch_sentences_sum"), 3) << t;
  EXPECT_EQ(metric(t, R"(attn_batch_sentences_bucket{le="1"})"), 1) << t;
  EXPECT_EQ(metric(t, R"(attn_batch_sentences_bucket{le="2"})"), 2) << t;
  EXPECT_EQ(metric(t, "attn_queue_sentences"), 0) << t;
  EXPECT_EQ(metric(t, "attn_queue_capacity_sentences"), 256) << t;
}

TEST(Serve, TranslateAnswersWhatTranslateLinesGives) {
  const auto& m = serve_toy_model();
  LiveServer s(m, options());
  auto c = s.client();
  const data::ParallelCorpus toy = data::reversal_corpus(4, 5);
  decode::TranslateOptions o;
  o.search.beam = 3;
  o.search.alignments = true;
  const auto want = decode::translate_lines(*m.model, *m.src_vocab, *m.tgt_vocab, toy.src, o);
  // one text
  auto r = post_json(*c, "/v1/translate", json{{"text", toy.src[0]}, {"beam", 3}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json one = body_of(r);
  EXPECT_EQ(one["translation"], want[0].hypotheses[0].text);
  EXPECT_EQ(one["translation"], toy.tgt[0]);  // the toy model learnt the task
  EXPECT_EQ(one["src_tokens"], want[0].src_pieces);
  EXPECT_EQ(one["tgt_tokens"], want[0].hypotheses[0].pieces);
  EXPECT_NEAR(one["score"].get<double>(), want[0].hypotheses[0].score, 1e-4);
  EXPECT_FALSE(one.contains("weights"));
  // texts, with alignments: one row per target piece and one for EOS, each a distribution
  r = post_json(*c, "/v1/translate", json{{"texts", toy.src}, {"beam", 3}, {"alignments", true}}.dump());
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  json many = body_of(r);
  ASSERT_EQ(many["translations"].size(), toy.src.size());
  for (size_t i = 0; i < toy.src.size(); ++i) {
    const json& t = many["translations"][i];
    const auto& h = want[i].hypotheses[0];
    EXPECT_EQ(t["translation"], h.text) << i;
    EXPECT_EQ(t["tgt_tokens"], h.pieces) << i;
    ASSERT_TRUE(h.finished);
    ASSERT_EQ(t["weights"].size(), h.pieces.size() + 1) << i;
    for (size_t row = 0; row < t["weights"].size(); ++row) {
      ASSERT_EQ(t["weights"][row].size(), want[i].src_pieces.size());
      double sum = 0;
      for (size_t j = 0; j < want[i].src_pieces.size(); ++j) {
        const double w = t["weights"][row][j].get<double>();
        EXPECT_NEAR(w, h.attention[row * want[i].src_pieces.size() + j], 1e-5);
        sum += w;
      }
      EXPECT_NEAR(sum, 1.0, 1e-5);
    }
  }
  // an empty text translates to nothing
  r = post_json(*c, "/v1/translate", R"({"texts": ["", "red cat ."], "beam": 1})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  many = body_of(r);
  EXPECT_EQ(many["translations"][0]["translation"], "");
  EXPECT_EQ(many["translations"][0]["tgt_tokens"].size(), 0u);
  EXPECT_EQ(many["translations"][1]["translation"], "chat rouge .");
}

TEST(Serve, EveryErrorStatus) {
  auto o = options();
  o.max_body = 1000;
  o.limits.max_src_pieces = 12;
  LiveServer s(serve_toy_model(), o);
  auto c = s.client();
  expect_error(post_json(*c, "/v1/translate", R"({"text": "red cat)"), 400, nullptr, "malformed JSON");
  expect_error(post_json(*c, "/v1/translate", R"(["red cat ."])"), 400, nullptr, "not an object");
  expect_error(post_json(*c, "/v1/translate", "{\"text\": \"red \xff cat\"}"), 400, nullptr, "invalid UTF-8");
  expect_error(post_json(*c, "/v1/translate", R"({"text": "red cat .", "beam": "3"})"), 400, "beam", "beam type");
  expect_error(post_json(*c, "/v1/translate", R"({"text": "red cat .", "beam": 0})"), 400, "beam", "beam 0");
  expect_error(post_json(*c, "/v1/translate", R"({"text": "red cat .", "beam": 17})"), 400, "beam", "beam 17");
  expect_error(post_json(*c, "/v1/translate", R"({"text": "red cat .", "alignments": 1})"), 400, "alignments",
               "alignments type");
  expect_error(post_json(*c, "/v1/translate", R"({"text": "red cat .", "bem": 3})"), 400, "bem", "unknown field");
  expect_error(post_json(*c, "/v1/translate", R"({"text": 5})"), 400, "text", "text type");
  expect_error(post_json(*c, "/v1/translate", R"({"beam": 2})"), 400, "text", "no text");
  expect_error(post_json(*c, "/v1/translate", R"({"text": "a", "texts": ["b"]})"), 400, "texts", "both");
  expect_error(post_json(*c, "/v1/translate", R"({"texts": ["b", 3]})"), 400, "texts", "texts element");
  expect_error(post_json(*c, "/v1/translate", R"({"texts": []})"), 400, "texts", "no texts");
  // the over-long text rule: more than --max-src-pieces pieces is refused, naming the limit
  std::string long_text;
  for (int i = 0; i < 13; ++i) long_text += "red ";
  ASSERT_GT(serve_toy_model().src_vocab->encode(long_text).size(), 12u);
  auto r = post_json(*c, "/v1/translate", json{{"texts", {"red cat .", long_text}}}.dump());
  expect_error(r, 400, "texts", "over-long text");
  EXPECT_NE(r->body.find("texts[1]"), std::string::npos) << r->body;
  EXPECT_NE(r->body.find("--max-src-pieces"), std::string::npos) << r->body;
  expect_error(post_json(*c, "/v1/translate", json{{"text", long_text}}.dump()), 400, "text", "over-long text");
  // up to the limit is fine
  const std::string short_text = "red cat two .";
  const size_t short_pieces = serve_toy_model().src_vocab->encode(short_text).size();
  ASSERT_GE(short_pieces, 10u);
  ASSERT_LE(short_pieces, 12u);
  EXPECT_EQ(post_json(*c, "/v1/translate", json{{"text", short_text}}.dump())->status, 200);
  // 413: one byte over --max-body; a body at the limit is read (an all-space text translates to "")
  const std::string head = R"({"text": ")", tail = "\"}";
  const std::string at_limit = head + std::string(1000 - head.size() - tail.size(), ' ') + tail;
  ASSERT_EQ(at_limit.size(), 1000u);
  r = post_json(*c, "/v1/translate", at_limit);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200) << r->body;
  expect_error(post_json(*c, "/v1/translate", head + " " + at_limit.substr(head.size())), 413, nullptr,
               "body too large");
  // 404 and 405 (with Allow)
  expect_error(c->Get("/v2/translate"), 404, nullptr, "unknown path");
  expect_error(post_json(*c, "/nope", "{}"), 404, nullptr, "unknown path, POST");
  r = c->Get("/v1/translate");
  expect_error(r, 405, nullptr, "GET translate");
  EXPECT_EQ(r->get_header_value("Allow"), "POST");
  r = post_json(*c, "/health", "{}");
  expect_error(r, 405, nullptr, "POST health");
  EXPECT_EQ(r->get_header_value("Allow"), "GET, HEAD");
  expect_error(c->Delete("/index.html"), 405, nullptr, "DELETE a web file");
  expect_error(c->Put("/v1/explain", "{}", "application/json"), 405, nullptr, "PUT explain");
  // no explain function: 501
  expect_error(post_json(*c, "/v1/explain", R"({"text": "red cat ."})"), 501, nullptr, "explain absent");
  // after all that, the server still translates
  r = post_json(*c, "/v1/translate", R"({"text": "red cat ."})");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

// Every message that quotes a request's key or value quotes it escaped and
// bounded (config::describe_text): a NUL inside a key cut the message at the
// NUL ({"error": "request.te"}), and a query value went in raw, at any length.
TEST(Serve, ErrorMessagesQuoteRequestTextEscapedAndBounded) {
  LiveServer s(serve_toy_model(), options());
  auto c = s.client();
  auto r = post_json(*c, "/v1/translate", R"({"text": "a", "te\u0000xt": 1})");
  expect_error(r, 400, std::string("te\0xt", 5), "NUL in a key", R"(request."te\u0000xt": unknown key (known keys:)");
  const std::string long_key(5000, 'k');
  r = post_json(*c, "/v1/translate", json{{"text", "a"}, {long_key + "\n", 1}}.dump());
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400);
  EXPECT_LT(json::parse(r->body)["error"].get<std::string>().size(), 200u) << "an unbounded key in the message";
  // query values and names: parsed by the same reader for the image routes
  const serve::RequestLimits limits;
  for (const auto& [name, value, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"beam", std::string("2\0x", 3), R"(query.beam: must be a whole number in [1, 16], got "2\u0000x")"},
           {"beam", std::string(5000, '9'), "got \"9999"},
           {std::string("be\0am", 5), "1", R"(query: unknown parameter "be\u0000am" (known: attention_map, beam))"},
           {"beam", "\xff", "got \"\xef\xbf\xbd\""}}) {
    try {
      serve::parse_caption_query({{name, value}}, limits);
      ADD_FAILURE() << "accepted " << name;
    } catch (const serve::RequestError& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find(says), std::string::npos) << message;
      EXPECT_LT(message.size(), 200u) << message;
    }
  }
}

// Each request limit out of range is refused naming its own flag.
TEST(Serve, EachRequestLimitIsNamedWhenOutOfRange) {
  for (const auto& [flag, set] : std::vector<std::pair<std::string, std::function<void(serve::RequestLimits&)>>>{
           {"--max-beam", [](serve::RequestLimits& l) { l.max_beam = 0; }},
           {"--max-top-k", [](serve::RequestLimits& l) { l.max_top_k = 0; }},
           {"--max-texts", [](serve::RequestLimits& l) { l.max_texts = 0; }},
           {"--max-src-pieces", [](serve::RequestLimits& l) { l.max_src_pieces = 0; }}}) {
    auto o = options();
    set(o.limits);
    try {
      serve::Server server(serve_toy_model(), o);
      ADD_FAILURE() << flag << " 0 accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_EQ(std::string(e.what()), "serve: " + flag + " must be >= 1");
    }
  }
}

}  // namespace
}  // namespace attn::testing::serve_test
