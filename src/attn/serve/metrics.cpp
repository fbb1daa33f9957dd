#include "attn/serve/metrics.h"

#include <algorithm>
#include <sstream>

namespace attn::serve {
namespace {

const std::string kOther = "other";

std::string number(double v) {
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

// name_bucket{labels,le="..."} lines, then _sum and _count
void write_histogram(std::ostringstream& out, const std::string& name, const std::string& labels, const Histogram& h) {
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i < h.bounds.size(); ++i)
    out << name << "_bucket{" << labels << sep << "le=\"" << number(h.bounds[i]) << "\"} " << h.counts[i] << "\n";
  out << name << "_bucket{" << labels << sep << "le=\"+Inf\"} " << h.count << "\n";
  const std::string braces = labels.empty() ? "" : "{" + labels + "}";
  out << name << "_sum" << braces << " " << number(h.sum) << "\n";
  out << name << "_count" << braces << " " << h.count << "\n";
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds) : bounds(std::move(upper_bounds)), counts(bounds.size(), 0) {}

void Histogram::observe(double v) {
  for (size_t i = 0; i < bounds.size(); ++i)
    if (v <= bounds[i]) ++counts[i];
  ++count;
  sum += v;
}

Metrics::Metrics(std::vector<std::string> paths)
    : paths_(std::move(paths)), batch_({1, 2, 4, 8, 16, 32, 64, 128, 256}) {}

const std::string& Metrics::label_of(const std::string& path) const {
  auto it = std::find(paths_.begin(), paths_.end(), path);
  return it == paths_.end() ? kOther : *it;
}

void Metrics::record_request(const std::string& path, int status, double seconds) {
  const std::string& label = label_of(path);
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{label, status}];
  auto it = latency_.find(label);
  if (it == latency_.end())
    it = latency_.emplace(label, Histogram({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}))
             .first;
  it->second.observe(seconds);
}

void Metrics::record_batch(int64_t sentences) {
  std::lock_guard<std::mutex> lock(mu_);
  batch_.observe(double(sentences));
}

std::string Metrics::prometheus(int64_t queue_sentences, int64_t queue_capacity) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::ostringstream out;
  out << "# HELP attn_http_requests_total HTTP requests answered, by route and status.\n"
         "# TYPE attn_http_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out << "attn_http_requests_total{path=\"" << key.first << "\",status=\"" << key.second << "\"} " << n << "\n";
  out << "# HELP attn_http_request_duration_seconds Time from a request's headers to its answer, by route.\n"
         "# TYPE attn_http_request_duration_seconds histogram\n";
  for (const auto& [label, h] : latency_)
    write_histogram(out, "attn_http_request_duration_seconds", "path=\"" + label + "\"", h);
  out << "# HELP attn_batch_sentences Sentences per decoded batch.\n"
         "# TYPE attn_batch_sentences histogram\n";
  write_histogram(out, "attn_batch_sentences", "", batch_);
  out << "# HELP attn_queue_sentences Sentences waiting for the decoder.\n"
         "# TYPE attn_queue_sentences gauge\n"
         "attn_queue_sentences " << queue_sentences << "\n"
      << "# HELP attn_queue_capacity_sentences Sentences the queue holds (--queue).\n"
         "# TYPE attn_queue_capacity_sentences gauge\n"
         "attn_queue_capacity_sentences " << queue_capacity << "\n";
  return out.str();
}

}  // namespace attn::serve
