// The server's counters, exposed by GET /metrics in Prometheus' text format
// (version 0.0.4):
//   attn_http_requests_total{path,status}          counter: answered requests
//   attn_http_request_duration_seconds{path}       histogram: from the request's headers read to its answer built
//   attn_batch_sentences                           histogram: sentences per decoded batch
//   attn_queue_sentences                           gauge: sentences waiting for the decoder
//   attn_queue_capacity_sentences                  gauge: --queue
// `path` is one of the server's routes, or "other" (so unknown paths cannot
// grow the label set). Thread-safe.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace attn::serve {

// Cumulative buckets as Prometheus counts them: counts[i] = observations <= bounds[i].
struct Histogram {
  std::vector<double> bounds;    // upper bounds, increasing (+Inf is implicit)
  std::vector<uint64_t> counts;  // per bound, cumulative
  uint64_t count = 0;
  double sum = 0;

  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
};

class Metrics {
public:
  // `paths`: the routes counted under their own label
  explicit Metrics(std::vector<std::string> paths);

  void record_request(const std::string& path, int status, double seconds);
  void record_batch(int64_t sentences);

  // The exposition text, with the queue's gauges as given.
  std::string prometheus(int64_t queue_sentences, int64_t queue_capacity) const;

private:
  const std::string& label_of(const std::string& path) const;

  std::vector<std::string> paths_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (path label, status) -> count
  std::map<std::string, Histogram> latency_;                  // path label -> seconds
  Histogram batch_;
};

}  // namespace attn::serve
