#include "attn/data/batcher.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

#include "attn/tensor/random.h"

namespace attn::data {

Batcher::Batcher(const EncodedCorpus& corpus, const BatchOptions& options) : corpus_(corpus), options_(options) {
  const auto& o = options_;
  if (o.max_tokens < 2 || o.max_sentences < 0 || o.sort_window < 1)
    throw std::invalid_argument("Batcher: need max_tokens >= 2, max_sentences >= 0, sort_window >= 1, got " +
                                std::to_string(o.max_tokens) + ", " + std::to_string(o.max_sentences) + ", " +
                                std::to_string(o.sort_window));
  corpus.check_sizes("Batcher");
  for (int64_t i = 0; i < corpus.size(); ++i) {
    if (corpus.src[i].empty())
      throw std::invalid_argument("Batcher: pair at corpus line " + std::to_string(corpus.line[i]) +
                                  " has an empty source (use filter_by_length with drop_empty)");
    if (cost(i) > o.max_tokens)
      throw std::invalid_argument("Batcher: pair at corpus line " + std::to_string(corpus.line[i]) + " needs " +
                                  std::to_string(cost(i)) + " padded tokens (src " +
                                  std::to_string(corpus.src[i].size()) + ", tgt " +
                                  std::to_string(corpus.tgt[i].size()) + " + 1) > max_tokens " +
                                  std::to_string(o.max_tokens) + "; filter lengths first");
  }
  for (int64_t i = 0; i < corpus.size(); ++i)
    if (i == 0 || !o.group_sources || corpus.src[i] != corpus.src[i - 1]) unit_start_.push_back(i);
  unit_start_.push_back(corpus.size());
  for (int64_t u = 0; u < units(); ++u)
    if (unit_pairs(u) * unit_cost(u) > o.max_tokens || (o.max_sentences > 0 && unit_pairs(u) > o.max_sentences))
      throw std::invalid_argument("Batcher: the " + std::to_string(unit_pairs(u)) +
                                  " pairs sharing the source of corpus line " +
                                  std::to_string(corpus.line[unit_start_[size_t(u)]]) + " need " +
                                  std::to_string(unit_pairs(u) * unit_cost(u)) + " padded tokens (max_tokens " +
                                  std::to_string(o.max_tokens) + ") and one batch (max_sentences " +
                                  std::to_string(o.max_sentences) + ")");
}

int64_t Batcher::unit_cost(int64_t u) const {
  int64_t c = 0;
  for (int64_t i = unit_start_[size_t(u)]; i < unit_start_[size_t(u + 1)]; ++i) c = std::max(c, cost(i));
  return c;
}

int64_t Batcher::cost(int64_t i) const {
  return std::max<int64_t>(int64_t(corpus_.src[i].size()), int64_t(corpus_.tgt[i].size()) + 1);
}

std::vector<std::vector<int64_t>> Batcher::plan_epoch(uint64_t epoch) const {
  const auto& o = options_;
  const int64_t n = units();
  std::vector<int64_t> order(n);  // units (pairs unless group_sources)
  std::iota(order.begin(), order.end(), int64_t(0));
  // One stream per (seed, epoch): Rng runs splitmix64 over the seed.
  Rng rng(o.seed * 0x9E3779B97F4A7C15ULL + epoch);
  if (o.shuffle) shuffle(order, rng);
  // a unit's length key: its widest pair's (target, source) lengths
  std::vector<std::pair<size_t, size_t>> key(size_t(n), {0, 0});
  for (int64_t u = 0; u < n; ++u)
    for (int64_t i = unit_start_[size_t(u)]; i < unit_start_[size_t(u + 1)]; ++i)
      key[size_t(u)] = std::max(key[size_t(u)], std::make_pair(corpus_.tgt[i].size(), corpus_.src[i].size()));

  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> batch;  // the open batch; it may continue into the next window
  int64_t widest = 0;          // max cost() in `batch`
  for (int64_t w = 0; w < n; w += o.sort_window) {
    const auto first = order.begin() + w, last = order.begin() + std::min(n, w + o.sort_window);
    std::stable_sort(first, last, [&](int64_t a, int64_t b) { return key[size_t(a)] < key[size_t(b)]; });
    for (auto it = first; it != last; ++it) {
      const int64_t c = unit_cost(*it), k = unit_pairs(*it);
      const bool full = (o.max_sentences > 0 && int64_t(batch.size()) + k > o.max_sentences) ||
                        (int64_t(batch.size()) + k) * std::max(widest, c) > o.max_tokens;
      if (!batch.empty() && full) {
        batches.push_back(std::move(batch));
        batch.clear();
        widest = 0;
      }
      for (int64_t i = unit_start_[size_t(*it)]; i < unit_start_[size_t(*it + 1)]; ++i) batch.push_back(i);
      widest = std::max(widest, c);
    }
  }
  if (!batch.empty()) batches.push_back(std::move(batch));
  if (o.shuffle) shuffle(batches, rng);
  return batches;
}

int64_t Batcher::target_tokens(const std::vector<int64_t>& indices) const {
  int64_t n = 0;
  for (int64_t i : indices) {
    if (i < 0 || i >= corpus_.size())
      throw std::invalid_argument("Batcher::target_tokens: index " + std::to_string(i) + " outside [0, " +
                                  std::to_string(corpus_.size()) + ")");
    n += int64_t(corpus_.tgt[size_t(i)].size()) + 1;
  }
  return n;
}

Seq2SeqBatch Batcher::make_batch(const std::vector<int64_t>& indices) const {
  const auto& o = options_;
  const int64_t B = int64_t(indices.size());
  if (B == 0) throw std::invalid_argument("Batcher::make_batch: empty index list");
  int64_t S = 0, T = 0;
  for (int64_t i : indices) {
    if (i < 0 || i >= corpus_.size())
      throw std::invalid_argument("Batcher::make_batch: index " + std::to_string(i) + " outside [0, " +
                                  std::to_string(corpus_.size()) + ")");
    S = std::max<int64_t>(S, int64_t(corpus_.src[i].size()));
    T = std::max<int64_t>(T, int64_t(corpus_.tgt[i].size()));
  }
  Seq2SeqBatch b;
  b.src = Tensor::full({B, S}, float(o.specials.pad));
  b.tgt_in = Tensor::full({B, T + 1}, float(o.specials.pad));
  b.tgt_out = Tensor::full({B, T + 1}, float(o.specials.pad));
  float* src = b.src.data();
  float* tin = b.tgt_in.data();
  float* tout = b.tgt_out.data();
  for (int64_t r = 0; r < B; ++r) {
    const std::vector<int>& s = corpus_.src[indices[r]];
    const std::vector<int>& t = corpus_.tgt[indices[r]];
    for (size_t j = 0; j < s.size(); ++j) src[r * S + int64_t(j)] = float(s[j]);
    tin[r * (T + 1)] = float(o.specials.bos);
    for (size_t j = 0; j < t.size(); ++j) {
      tin[r * (T + 1) + int64_t(j) + 1] = float(t[j]);
      tout[r * (T + 1) + int64_t(j)] = float(t[j]);
    }
    tout[r * (T + 1) + int64_t(t.size())] = float(o.specials.eos);
    b.src_lengths.push_back(int64_t(s.size()));
    b.targets.push_back(t);
  }
  return b;
}

}  // namespace attn::data
