#include "attn/train/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "attn/train/seed.h"

namespace attn::train {

std::vector<int64_t> shard_of(const std::vector<int64_t>& batch, int rank, int ranks) {
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw std::invalid_argument("shard_of: rank " + std::to_string(rank) + " of " + std::to_string(ranks));
  const size_t n = batch.size(), k = size_t(ranks), r = size_t(rank);
  const size_t base = n / k, extra = n % k;
  const size_t begin = r * base + std::min(r, extra);
  const size_t end = begin + base + (r < extra ? 1 : 0);
  return std::vector<int64_t>(batch.begin() + ptrdiff_t(begin), batch.begin() + ptrdiff_t(end));
}

GradientExchange::GradientExchange(const nn::NamedTensors& params, Collective& collective, int64_t bucket_bytes)
    : params_(params), collective_(collective) {
  const int64_t cap = std::max<int64_t>(1, bucket_bytes / int64_t(sizeof(float)));
  int64_t filled = 0;
  for (size_t i = params_.size(); i-- > 0;) {
    const int64_t n = params_[i].second.numel();
    if (buckets_.empty() || (filled > 0 && filled + n > cap)) {
      buckets_.emplace_back();
      filled = 0;
    }
    buckets_.back().params.push_back(i);
    bucket_of_[params_[i].second.impl()] = buckets_.size() - 1;
    filled += n;
  }
  for (Bucket& b : buckets_) {
    int64_t n = 0;
    for (size_t i : b.params) n += params_[i].second.numel();
    b.data.resize(size_t(n));
  }
}

void GradientExchange::on_ready(const Tensor& param) {
  const auto it = bucket_of_.find(param.impl());
  if (it == bucket_of_.end()) return;  // a leaf that is not a parameter (none of the built-in models has one)
  ++buckets_[it->second].ready;
  start_ready_buckets();
  collective_.progress();
}

void GradientExchange::start_ready_buckets() {
  while (next_ < buckets_.size() && buckets_[next_].ready == buckets_[next_].params.size()) start(buckets_[next_++]);
}

// Copies the bucket's gradients in (zeros for a parameter without one) and starts its sum.
void GradientExchange::start(Bucket& b) {
  float* out = b.data.data();
  for (size_t i : b.params) {
    const Tensor& p = params_[i].second;
    const Tensor g = p.grad();
    const size_t n = size_t(p.numel());
    if (g.defined())
      std::memcpy(out, g.data(), n * sizeof(float));
    else
      std::fill(out, out + n, 0.0f);
    out += n;
  }
  collective_.start_sum(b.data.data(), int64_t(b.data.size()));
}

void GradientExchange::finish(int64_t step) {
  while (next_ < buckets_.size()) start(buckets_[next_++]);
  const auto t0 = std::chrono::steady_clock::now();
  collective_.finish_sums(step);
  wait_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (Bucket& b : buckets_) {
    const float* in = b.data.data();
    for (size_t i : b.params) {
      const Tensor& p = params_[i].second;
      Tensor g = p.grad();
      if (!g.defined()) {  // another rank's gradient where this one had none (an empty shard)
        g = Tensor::zeros(p.shape());
        p.impl()->grad = g.impl_ptr();
      }
      std::memcpy(g.data(), in, size_t(p.numel()) * sizeof(float));
      in += p.numel();
    }
    b.ready = 0;
  }
  next_ = 0;
}

StepFigures agree_on_step(Collective& collective, const StepFigures& mine) {
  std::vector<double> v = {mine.loss_tokens, mine.seconds, mine.stop ? 1.0 : 0.0, mine.checkpoint ? 1.0 : 0.0};
  collective.sum(v);
  return {v[0], v[1], v[2] > 0, v[3] > 0};
}

std::string rng_states_json(const nn::Module& model) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (const auto& [name, rng] : model.named_rngs()) j[name] = rng->state();
  return j.dump();
}

void set_rng_states(nn::Module& model, const std::string& json_text, const std::string& what) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(what + ": random streams: not valid JSON");
  }
  const nn::NamedRngs streams = model.named_rngs();
  if (!j.is_object() || j.size() != streams.size())
    throw std::runtime_error(what + ": random streams: not the model's " + std::to_string(streams.size()) + " streams");
  for (const auto& [name, rng] : streams) {
    if (!j.contains(name) || !j[name].is_string())
      throw std::runtime_error(what + ": random streams: no state for '" + name + "'");
    try {
      rng->set_state(j[name].get<std::string>());
    } catch (const std::exception& e) {
      throw std::runtime_error(what + ": random stream '" + name + "': " + e.what());
    }
  }
}

uint64_t parameter_fingerprint(const nn::NamedTensors& params) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const auto& [name, t] : params) {
    const auto* bytes = reinterpret_cast<const unsigned char*>(t.data());
    for (size_t i = 0, n = size_t(t.numel()) * sizeof(float); i < n; ++i) h = (h ^ bytes[i]) * 0x100000001b3ULL;
  }
  return h;
}

void reseed_rank_streams(nn::Module& model, uint64_t seed, int rank, int64_t step) {
  const uint64_t rank_seed = derive_seed(seed, "dropout.rank" + std::to_string(rank));
  for (const auto& [name, rng] : model.named_rngs())
    *rng = Rng(derive_seed(rank_seed, name + "@step" + std::to_string(step)));
}

}  // namespace attn::train
