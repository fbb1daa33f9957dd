// Held-out splits of one parallel corpus, by source sentence: every pair whose
// source sentence is held out goes to that split, so no source sentence
// appears in two splits (Tatoeba has many translations of one sentence).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "attn/data/parallel_corpus.h"

namespace attn::data {

struct CorpusSplit {
  ParallelCorpus train, valid, test;  // pairs in corpus order within each split
};

// What "the same source sentence" means for a split: ASCII letters
// lower-cased, runs of spaces/tabs collapsed, ends trimmed. Tatoeba holds a
// few sentences twice with only capitalisation changed ("France is in
// western Europe." / "... Western Europe."); counting them as one keeps them
// on one side.
std::string split_key(std::string_view source);

// Shuffles the distinct source sentences (by split_key) with `seed`
// (thread-independent) and holds out the first `valid_sources` for valid and
// the next `test_sources` for test. Throws std::invalid_argument when the
// corpus has fewer distinct source sentences than valid_sources +
// test_sources + 1.
CorpusSplit split_by_source(const ParallelCorpus& corpus, int64_t valid_sources, int64_t test_sources, uint64_t seed);

}  // namespace attn::data
