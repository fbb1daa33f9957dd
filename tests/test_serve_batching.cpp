// The micro-batcher behind `attn serve`, through the real server and model:
// concurrent clients each get exactly the answer their request gets alone,
// batches form (and respect --max-batch), a full queue answers 503 at once,
// and explain requests run on the decoding worker, validated; and the
// batcher alone: a long request takes turns with later ones.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <chrono>
#include <future>
#include <mutex>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "attn/data/toy_tasks.h"
#include "attn/serve/batcher.h"
#include "serve_test_util.h"

namespace attn::testing::serve_batching_test {
namespace {

using nlohmann::json;

// 16 clients, 6 requests each (one or two texts, beam 1 or 3, with and
// without alignments): every answer is the answer the same request got when
// it was the only one in the server: the same translation and pieces, and
// the same score and weights up to float rounding (a batch-mate changes the
// padded source length and the rows of the encoder's products, which moves
// the last bits; README.md, "attn serve", gives the measured bound).
TEST(ServeBatching, ConcurrentClientsGetTheirSingleRequestAnswers) {
  serve::ServerOptions o;
  o.threads = 1;
  o.max_batch = 8;
  o.max_wait_ms = 30;  // long enough on a busy machine for batches to form
  LiveServer s(serve_toy_model(), o);
  const data::ParallelCorpus toy = data::reversal_corpus(96, 31);
  const int clients = 16, per_client = 6;
  std::vector<std::string> requests;
  for (int i = 0; i < clients * per_client; ++i) {
    json r = i % 5 == 0 ? json{{"texts", {toy.src[size_t(i)], toy.src[size_t((i + 1) % 96)]}}}
                        : json{{"text", toy.src[size_t(i)]}};
    r["beam"] = i % 3 == 0 ? 3 : 1;
    r["alignments"] = i % 4 == 0;
    requests.push_back(r.dump());
  }
  std::vector<std::string> alone(requests.size());
  {
    auto c = s.client();
    for (size_t i = 0; i < requests.size(); ++i) {
      auto r = post_json(*c, "/v1/translate", requests[i]);
      ASSERT_TRUE(r);
      ASSERT_EQ(r->status, 200) << r->body;
      alone[i] = r->body;
    }
  }
  auto c0 = s.client();
  const std::string before = c0->Get("/metrics")->body;
  std::vector<std::string> together(requests.size());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < clients; ++t)
    threads.emplace_back([&, t] {
      auto c = s.client();
      for (int k = 0; k < per_client; ++k) {
        const size_t i = size_t(t * per_client + k);
        auto r = post_json(*c, "/v1/translate", requests[i]);
        if (!r || r->status != 200) {
          ++failures;
          continue;
        }
        together[i] = r->body;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures, 0);
  double max_score_diff = 0, max_weight_diff = 0;
  int bit_identical = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (together[i].empty()) continue;
    bit_identical += together[i] == alone[i];
    const json a = json::parse(alone[i]), b = json::parse(together[i]);
    const json as = a.contains("translations") ? a["translations"] : json::array({a});
    const json bs = b.contains("translations") ? b["translations"] : json::array({b});
    ASSERT_EQ(as.size(), bs.size()) << i;
    for (size_t k = 0; k < as.size(); ++k) {
      EXPECT_EQ(bs[k]["translation"], as[k]["translation"]) << "request " << i << ": " << requests[i];
      EXPECT_EQ(bs[k]["src_tokens"], as[k]["src_tokens"]) << i;
      EXPECT_EQ(bs[k]["tgt_tokens"], as[k]["tgt_tokens"]) << i;
      EXPECT_EQ(bs[k].contains("weights"), as[k].contains("weights")) << i;
      max_score_diff = std::max(max_score_diff, std::abs(bs[k]["score"].get<double>() - as[k]["score"].get<double>()));
      if (!as[k].contains("weights")) continue;
      ASSERT_EQ(bs[k]["weights"].size(), as[k]["weights"].size()) << i;
      for (size_t r = 0; r < as[k]["weights"].size(); ++r)
        for (size_t j = 0; j < as[k]["weights"][r].size(); ++j)
          max_weight_diff = std::max(max_weight_diff, std::abs(bs[k]["weights"][r][j].get<double>() -
                                                               as[k]["weights"][r][j].get<double>()));
    }
  }
  std::printf("batched vs alone: %d of %zu answers bit-identical, max |score diff| %.3g, max |weight diff| %.3g\n",
              bit_identical, requests.size(), max_score_diff, max_weight_diff);
  EXPECT_LT(max_score_diff, 1e-5);
  EXPECT_LT(max_weight_diff, 1e-5);
  // the concurrent phase did batch: fewer batches than sentences, none over --max-batch
  const std::string after = c0->Get("/metrics")->body;
  const double batches = metric(after, "attn_batch_sentences_count") - metric(before, "attn_batch_sentences_count");
  const double sentences = metric(after, "attn_batch_sentences_sum") - metric(before, "attn_batch_sentences_sum");
  EXPECT_EQ(sentences, clients * per_client + clients * per_client / 5 + 1);
  EXPECT_LT(batches, sentences * 0.75) << "hardly any batching: " << batches << " batches for " << sentences;
  EXPECT_EQ(metric(after, R"(attn_batch_sentences_bucket{le="8"})"), metric(after, "attn_batch_sentences_count"));
  std::printf("16 clients: %.0f sentences in %.0f batches\n", sentences, batches);
}

// A batch waits at most --max-wait-ms for company, and closes as soon as it
// holds --max-batch sentences.
TEST(ServeBatching, BatchClosesAtMaxBatchOrAfterMaxWait) {
  serve::ServerOptions o;
  o.threads = 1;
  o.max_batch = 2;
  o.max_wait_ms = 1500;
  LiveServer s(serve_toy_model(), o);
  auto seconds_for = [&](int clients) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::future<int>> f;
    for (int i = 0; i < clients; ++i)
      f.push_back(std::async(std::launch::async, [&] {
        auto c = s.client();
        auto r = post_json(*c, "/v1/translate", R"({"text": "red cat two .", "beam": 1})");
        return r ? r->status : -1;
      }));
    for (auto& x : f) EXPECT_EQ(x.get(), 200);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const double alone = seconds_for(1), pair = seconds_for(2);
  std::printf("one request: %.3f s, two at once: %.3f s (max wait 1.5 s)\n", alone, pair);
  EXPECT_GE(alone, 1.4);   // waited for company, up to the bound
  EXPECT_LT(alone, 10.0);  // and not without bound
  EXPECT_LT(pair, 1.4);    // full at two sentences: no wait
}

// An explain function of the test's own that holds the decoding worker until
// released: the queue (2 sentences) fills behind it, the next request is
// refused with 503 at once, and the queued ones are answered after release.
TEST(ServeBatching, FullQueueAnswers503AtOnce) {
  std::promise<void> entered;
  WorkerGate gate;
  std::atomic<bool> entered_once{false};
  serve::ServerOptions o;
  o.threads = 1;
  o.queue = 2;
  o.max_wait_ms = 0;
  o.explain = [&](const json& req, const Tensor&) {
    if (!entered_once.exchange(true)) entered.set_value();
    gate.wait();
    return json{{"echo", req}};
  };
  LiveServer s(serve_toy_model(), o);
  std::future<httplib::Result> explain, queued;  // their destructors wait for the worker...
  OpenGateOnExit open_on_every_path{gate};       // ...so it is released before, whichever ASSERT returns
  explain = std::async(std::launch::async, [&] {
    auto c = s.client();
    return post_json(*c, "/v1/explain", R"({"text": "red cat ."})");
  });
  ASSERT_EQ(entered.get_future().wait_for(std::chrono::seconds(30)), std::future_status::ready);
  queued = std::async(std::launch::async, [&] {
    auto c = s.client();
    return post_json(*c, "/v1/translate", R"({"texts": ["red cat .", "two dogs ."], "beam": 1})");
  });
  auto c = s.client(5);  // a request that waited for the worker would time out (and fail) instead of hang
  for (int i = 0; i < 3000 && c->Get("/health") && json::parse(c->Get("/health")->body)["queue_sentences"] != 2; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(json::parse(c->Get("/health")->body)["queue_sentences"], 2);
  const auto t0 = std::chrono::steady_clock::now();
  auto full = post_json(*c, "/v1/translate", R"({"text": "red cat ."})");
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(full);
  EXPECT_EQ(full->status, 503) << full->body;
  EXPECT_EQ(full->get_header_value("Retry-After"), "1");
  EXPECT_NE(json::parse(full->body)["error"].get<std::string>().find("queue full"), std::string::npos);
  EXPECT_LT(waited, 2.0);  // at once, not after the worker frees up
  // a request the queue could never hold: 400 naming the limit (the queue's size)
  auto too_many = post_json(*c, "/v1/translate", R"({"texts": ["a", "b", "c"]})");
  ASSERT_TRUE(too_many);
  EXPECT_EQ(too_many->status, 400);
  EXPECT_EQ(json::parse(too_many->body)["field"], "texts");
  EXPECT_EQ(metric(c->Get("/metrics")->body, "attn_queue_sentences"), 2);
  gate.open();
  auto q = queued.get();
  ASSERT_TRUE(q);
  EXPECT_EQ(q->status, 200) << q->body;
  EXPECT_EQ(json::parse(q->body)["translations"][0]["translation"], "chat rouge .");
  auto e = explain.get();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 200);
  EXPECT_EQ(metric(c->Get("/metrics")->body, R"(attn_http_requests_total{path="/v1/translate",status="503"})"), 1);
}

// A request of many sentences is decoded in batches of --max-batch, taking
// turns with the requests that arrive meanwhile: one of 40 sentences at beam 16
// does not hold a greedy request behind all of them (before: it went in one
// batch of 40, and a 3-word greedy request waited 57 s behind such a one).
// The worker runs a decode function of the test's own, held at its first
// batch until the second request is queued: the order does not depend on timing.
TEST(ServeBatching, LongRequestTakesTurnsWithLaterOnes) {
  WorkerGate gate;
  std::mutex mu;
  std::vector<std::vector<std::string>> batches;  // each batch's texts, in decoding order
  serve::TranslateBatch echo = [&](const std::vector<std::string>& texts, const serve::BatchKey&) {
    {
      std::lock_guard<std::mutex> lock(mu);
      batches.push_back(texts);
    }
    gate.wait();
    std::vector<decode::Translation> out(texts.size());
    for (size_t i = 0; i < texts.size(); ++i) out[i].hypotheses.push_back({texts[i] + "!", {}, 0, 0, true, {}});
    return out;
  };
  serve::MicroBatcher batcher({/*max_batch*/ 4, std::chrono::microseconds(0), /*capacity*/ 64, 1}, echo, {}, {});
  std::vector<std::string> long_texts;
  for (int i = 0; i < 40; ++i) long_texts.push_back("long " + std::to_string(i));
  std::future<std::vector<decode::Translation>> long_request, short_request;
  OpenGateOnExit open_on_every_path{gate};
  long_request = batcher.submit_translate(long_texts, {16, false, false});
  for (int i = 0; i < 3000 && batcher.queued_sentences() != 36; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_EQ(batcher.queued_sentences(), 36) << "the first batch holds 4 of the 40 sentences";
  short_request = batcher.submit_translate({"red cat ."}, {1, false, false});
  gate.open();
  const std::vector<decode::Translation> short_answer = short_request.get(), long_answer = long_request.get();
  ASSERT_EQ(short_answer.size(), 1u);
  EXPECT_EQ(short_answer[0].hypotheses[0].text, "red cat .!");
  ASSERT_EQ(long_answer.size(), 40u);
  for (size_t i = 0; i < 40; ++i) EXPECT_EQ(long_answer[i].hypotheses[0].text, long_texts[i] + "!") << i;
  ASSERT_EQ(batches.size(), 11u);  // ten of the long one, one of the short one
  EXPECT_EQ(batches[1], std::vector<std::string>{"red cat ."}) << "the short request waited for more than one batch";
  for (const auto& b : batches) EXPECT_LE(b.size(), 4u);
}

// /v1/explain: the server validates the fields and fills in the defaults,
// then calls the injected function on the decoding worker (the thread that
// runs the translations), and maps its std::invalid_argument to 400.
TEST(ServeBatching, ExplainRouteValidatesAndRunsOnTheWorker) {
  std::mutex mu;
  std::set<std::thread::id> explain_threads;
  serve::ServerOptions o;
  o.threads = 1;
  o.limits.max_top_k = 20;
  o.explain = [&](const json& req, const Tensor&) {
    {
      std::lock_guard<std::mutex> lock(mu);
      explain_threads.insert(std::this_thread::get_id());
    }
    if (req["text"] == "boom") throw std::invalid_argument("cannot explain boom");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // so that concurrent requests overlap
    return json{{"echo", req}};
  };
  LiveServer s(serve_toy_model(), o);
  auto c = s.client();
  auto r = post_json(*c, "/v1/explain", R"({"text": "red cat ."})");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  // every field present, the attention map resolved to the model's own (and no encoder map: an RNN has none)
  EXPECT_EQ(json::parse(r->body)["echo"], (json{{"text", "red cat ."}, {"beam", 1}, {"top_k", 5}, {"words", false},
                                                {"attention_map", "attention"}, {"self_attention_map", ""}}));
  r = post_json(*c, "/v1/explain", R"({"text": "red cat .", "beam": 4, "top_k": 20, "words": true})");
  ASSERT_TRUE(r);
  EXPECT_EQ(json::parse(r->body)["echo"], (json{{"text", "red cat ."}, {"beam", 4}, {"top_k", 20}, {"words", true},
                                                {"attention_map", "attention"}, {"self_attention_map", ""}}));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {R"({"text": "a", "top_k": 0})", "top_k"},   {R"({"text": "a", "top_k": 21})", "top_k"},
      {R"({"text": "a", "words": "yes"})", "words"}, {R"({"text": "a", "beam": 0})", "beam"},
      {R"({"text": "a", "steps": 3})", "steps"},     {R"({"text": "  "})", "text"},
      {R"({"texts": ["a"]})", "text"},               {R"({"text": "a", "attention_map": "b"})", "attention_map"},
      {R"({"text": "a", "self_attention_map": "self.layer1.mean"})", "self_attention_map"},
      {R"({"text": "boom"})", "text"}};
  for (const auto& [body, field] : bad) {
    r = post_json(*c, "/v1/explain", body);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << body;
    EXPECT_EQ(json::parse(r->body)["field"], field) << body << " -> " << r->body;
  }
  EXPECT_NE(r->body.find("cannot explain boom"), std::string::npos);
  // four clients at once, each on its own connection and so its own connection
  // thread: one thread (the worker) explains them all
  {
    std::lock_guard<std::mutex> lock(mu);
    explain_threads.clear();
  }
  std::vector<std::future<int>> at_once;
  for (int i = 0; i < 4; ++i)
    at_once.push_back(std::async(std::launch::async, [&] {
      auto ci = s.client();
      auto ri = post_json(*ci, "/v1/explain", R"({"text": "two red dogs ."})");
      return ri ? ri->status : -1;
    }));
  for (auto& f : at_once) EXPECT_EQ(f.get(), 200);
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(explain_threads.size(), 1u);
  EXPECT_EQ(explain_threads.count(std::this_thread::get_id()), 0u);
}

}  // namespace
}  // namespace attn::testing::serve_batching_test
