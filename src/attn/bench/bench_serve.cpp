// `attn bench serve -m RUN`: the HTTP server (serve/server.h) under load on
// loopback, batched (--max-batch 32) beside unbatched (--max-batch 1), with
// 1, 8 and 32 concurrent clients (httplib clients on threads of this process,
// each sending one sentence per request and waiting for its answer).
//
// Each (batching, clients) run is bounded: it stops after `requests` answers
// or `seconds`, whichever comes first, after a warm-up of one request per
// client. One JSON line per run: requests/s, p50 / p99 latency, errors (must
// be 0), the process's RSS before the server started and after the run, and
// the machine; then per client count the batched / unbatched ratio.
// The sentences: `input` (one per line), by default RUN/test.src.
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>
#include <unistd.h>

#include "attn/bench/bench.h"
#include "attn/data/line_reader.h"
#include "attn/decode/model_dir.h"
#include "attn/serve/server.h"

namespace attn::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct LoadResult {
  int64_t requests = 0, errors = 0;
  double seconds = 0;
  std::vector<double> latency_ms;  // of the answered requests
};

// `clients` threads post bodies[i % n] until `max_requests` are issued or `max_seconds` pass.
LoadResult run_load(int port, int clients, const std::vector<std::string>& bodies, int64_t max_requests,
                    double max_seconds) {
  std::atomic<int64_t> next{0}, errors{0};
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::vector<std::unique_ptr<httplib::Client>> conns;
  for (int c = 0; c < clients; ++c) {
    conns.push_back(std::make_unique<httplib::Client>("127.0.0.1", port));
    conns.back()->set_read_timeout(120, 0);
    conns.back()->set_keep_alive(true);
    conns.back()->set_tcp_nodelay(true);  // a request is two writes too (headers, body): no Nagle delay
    auto warm = conns.back()->Post("/v1/translate", bodies[size_t(c) % bodies.size()], "application/json");
    if (!warm || warm->status != 200) ++errors;
  }
  const auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      for (;;) {
        const int64_t i = next++;
        if (i >= max_requests || std::chrono::duration<double>(Clock::now() - t0).count() > max_seconds) return;
        const auto a = Clock::now();
        auto r = conns[size_t(c)]->Post("/v1/translate", bodies[size_t(i) % bodies.size()], "application/json");
        if (!r || r->status != 200) {
          ++errors;
          continue;
        }
        lat[size_t(c)].push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      }
    });
  for (auto& t : threads) t.join();
  LoadResult r;
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.errors = errors;
  for (auto& l : lat) r.latency_ms.insert(r.latency_ms.end(), l.begin(), l.end());
  r.requests = int64_t(r.latency_ms.size());
  std::sort(r.latency_ms.begin(), r.latency_ms.end());
  return r;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, size_t(p * double(sorted.size())))];
}

}  // namespace

size_t rss_current_bytes() {
  std::ifstream f("/proc/self/statm");
  size_t pages = 0, resident = 0;
  f >> pages >> resident;
  return resident * size_t(::sysconf(_SC_PAGESIZE));
}

void bench_serve(const BenchOptions& opt, const ServeBenchOptions& s) {
  const decode::TranslationModel model = decode::load_translation_model(s.run);
  const std::string input = s.input.empty() ? s.run + "/test.src" : s.input;
  std::vector<std::string> bodies;
  for (const std::string& line : data::read_lines(input))
    if (!line.empty()) bodies.push_back(nlohmann::json{{"text", line}, {"beam", s.beam}}.dump());
  if (bodies.empty()) throw std::invalid_argument("bench serve: no sentences in " + input);
  std::map<int, double> batched_rps, unbatched_rps;
  for (int clients : s.clients)
    for (int64_t max_batch : {int64_t(32), int64_t(1)}) {
      serve::ServerOptions so;
      so.max_batch = max_batch;
      so.threads = opt.threads;
      so.queue = 1024;
      const size_t rss_before = rss_current_bytes();
      serve::Server server(model, so);
      const int port = server.bind();
      std::thread serving([&] { server.run(); });
      const LoadResult r = run_load(port, clients, bodies, s.requests, s.seconds);
      server.stop();
      serving.join();
      const double rps = double(r.requests) / r.seconds;
      (max_batch > 1 ? batched_rps : unbatched_rps)[clients] = rps;
      nlohmann::json j = {{"bench", "serve"}, {"impl", "attn"}, {"max_batch", max_batch}, {"max_wait_ms", so.max_wait_ms},
                          {"clients", clients}, {"beam", s.beam}, {"threads", opt.threads},
                          {"requests", r.requests}, {"seconds", r.seconds}, {"requests_per_s", rps},
                          {"p50_ms", percentile(r.latency_ms, 0.50)}, {"p99_ms", percentile(r.latency_ms, 0.99)},
                          {"errors", r.errors}, {"rss_before_bytes", rss_before}, {"rss_after_bytes", rss_current_bytes()},
                          {"input", input}, {"model", s.run}};
      j.update(machine_record());
      emit(j);
    }
  for (int clients : s.clients)
    emit({{"bench", "serve"}, {"clients", clients}, {"batched_over_unbatched", batched_rps[clients] / unbatched_rps[clients]}});
}

}  // namespace attn::bench
