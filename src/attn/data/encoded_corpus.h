// A parallel corpus as token ids, and length filtering.
//
// Ids carry no BOS/EOS (the batcher adds them). `line` keeps each pair's
// 1-based line in the original file(s), so filtered or shuffled data can
// always be traced back.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/data/parallel_corpus.h"
#include "attn/data/vocab.h"

namespace attn::data {

struct EncodedCorpus {
  std::vector<std::vector<int>> src;  // [pairs][src_len] source ids
  std::vector<std::vector<int>> tgt;  // [pairs][tgt_len] target ids
  std::vector<int64_t> line;          // [pairs] 1-based line of the pair in the text corpus
  int64_t size() const { return int64_t(src.size()); }
  // Throws std::invalid_argument naming `who` unless tgt and line have src's size.
  void check_sizes(const char* who) const;
};

// Encodes both sides (in parallel, thread-count independent). Use the same
// vocabulary twice for a joint vocabulary.
EncodedCorpus encode_corpus(const ParallelCorpus& corpus, const SubwordVocab& src_vocab, const SubwordVocab& tgt_vocab);

struct LengthFilter {
  int64_t max_src_tokens = 128;  // drop pairs whose source has more ids
  int64_t max_tgt_tokens = 128;  // drop pairs whose target has more ids
  double max_ratio = 3.0;        // drop when longer/shorter side > max_ratio (lengths in ids,
                                 // shorter counted as at least 1); 0 disables
  bool drop_empty = true;        // drop pairs with an empty side
};

struct FilterReport {
  int64_t kept = 0;
  int64_t empty = 0;      // dropped: a side had no token
  int64_t too_long = 0;   // dropped: over max_src_tokens / max_tgt_tokens
  int64_t bad_ratio = 0;  // dropped: length ratio over max_ratio
};

// The pairs that pass `filter`, in their original order. Each dropped pair is
// counted once, under the first rule it fails (empty, then too long, then ratio).
EncodedCorpus filter_by_length(const EncodedCorpus& corpus, const LengthFilter& filter, FilterReport* report = nullptr);

}  // namespace attn::data
