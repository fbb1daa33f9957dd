#include "attn/data/split.h"

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "attn/tensor/random.h"

namespace attn::data {

std::string split_key(std::string_view source) {
  std::string key;
  key.reserve(source.size());
  bool space = false;
  for (char c : source) {
    if (c == ' ' || c == '\t') {
      space = !key.empty();
      continue;
    }
    if (space) key.push_back(' ');
    space = false;
    key.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c);
  }
  return key;
}

CorpusSplit split_by_source(const ParallelCorpus& corpus, int64_t valid_sources, int64_t test_sources, uint64_t seed) {
  if (valid_sources < 0 || test_sources < 0) throw std::invalid_argument("split_by_source: negative split size");
  std::unordered_map<std::string, int64_t> id;  // split_key(source) -> index in first-appearance order
  std::vector<int64_t> pair_source(static_cast<size_t>(corpus.size()));
  for (int64_t i = 0; i < corpus.size(); ++i)
    pair_source[size_t(i)] = id.emplace(split_key(corpus.src[size_t(i)]), int64_t(id.size())).first->second;
  const int64_t n = int64_t(id.size());
  if (valid_sources + test_sources >= n)
    throw std::invalid_argument("split_by_source: " + std::to_string(valid_sources) + " valid + " +
                                std::to_string(test_sources) + " test source sentences held out of only " +
                                std::to_string(n) + " distinct ones");
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  Rng rng(seed);
  shuffle(perm, rng);
  std::vector<int> where(static_cast<size_t>(n), 0);  // 0 train, 1 valid, 2 test
  for (int64_t k = 0; k < valid_sources + test_sources; ++k) where[size_t(perm[size_t(k)])] = k < valid_sources ? 1 : 2;
  CorpusSplit s;
  for (int64_t i = 0; i < corpus.size(); ++i) {
    ParallelCorpus& dst = where[size_t(pair_source[size_t(i)])] == 0 ? s.train
                          : where[size_t(pair_source[size_t(i)])] == 1 ? s.valid
                                                                     : s.test;
    dst.src.push_back(corpus.src[size_t(i)]);
    dst.tgt.push_back(corpus.tgt[size_t(i)]);
  }
  return s;
}

}  // namespace attn::data
