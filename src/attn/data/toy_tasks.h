// A synthetic translation task for the demo (`attn demo`) and the end-to-end
// tests: no files to download, exact answers.
//
// Source: 3 to 7 words of a 24-word English lexicon and " ."; target: the
// French words in reverse order and " .":
//   "red cat two ."  ->  "deux chat rouge ."
// Word-by-word lookup is easy; the reversal is not learnable from word
// statistics: the decoder's attention has to walk the source backwards.
#pragma once
#include <cstdint>

#include "attn/data/parallel_corpus.h"

namespace attn::data {

// n pairs drawn with an Rng seeded by `seed` (the same pairs on every machine).
ParallelCorpus reversal_corpus(int64_t n, uint64_t seed);

}  // namespace attn::data
