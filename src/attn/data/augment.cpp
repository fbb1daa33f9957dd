#include "attn/data/augment.h"

#include <stdexcept>
#include <string>
#include <vector>

#include "attn/tensor/random.h"

namespace attn::data {

std::string casual_form(std::string_view sentence) {
  std::string s;
  s.reserve(sentence.size());
  for (char c : sentence) s.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c);
  while (!s.empty() && (s.back() == '.' || s.back() == '!' || s.back() == '?' || s.back() == ' ')) s.pop_back();
  return s;
}

int64_t add_casual_sources(ParallelCorpus& corpus, double share, uint64_t seed) {
  if (!(share >= 0.0 && share <= 1.0))
    throw std::invalid_argument("add_casual_sources: share " + std::to_string(share) + " outside [0, 1]");
  const int64_t n = corpus.size(), picks = int64_t(share * double(n));
  // The first `picks` of a seeded shuffle of the pair indices, in corpus order.
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  Rng rng(seed);
  shuffle(perm, rng);
  std::vector<char> picked(static_cast<size_t>(n), 0);
  for (int64_t k = 0; k < picks; ++k) picked[size_t(perm[size_t(k)])] = 1;
  int64_t added = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!picked[size_t(i)]) continue;
    std::string casual = casual_form(corpus.src[size_t(i)]);
    if (casual == corpus.src[size_t(i)] || casual.empty()) continue;
    corpus.src.push_back(std::move(casual));
    std::string target = corpus.tgt[size_t(i)];
    corpus.tgt.push_back(std::move(target));
    ++added;
  }
  return added;
}

}  // namespace attn::data
