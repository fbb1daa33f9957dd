// Token-budget batches from length buckets, for training and evaluation.
//
// One epoch (plan_epoch):
//   1. shuffle all pair indices (Fisher-Yates, Rng seeded by seed and epoch)
//   2. cut the order into windows of `sort_window` pairs; stable-sort each
//      window by (target length, source length) so similar lengths meet
//      (sort_window = 1: no sorting)
//   3. walk the windows in turn filling a batch while
//        batch_size * max(src_len, tgt_len + 1) <= max_tokens
//      (the padded size of src [B, S] and of tgt_in/tgt_out [B, T+1])
//      and batch_size <= max_sentences; a batch may span two windows
//   4. shuffle the order of the batches
// With group_sources, the unit of steps 1-3 is a run of consecutive pairs with
// the same source (a captioning corpus: an image and its captions), sorted by
// its longest pair and never split across batches, so that a batch holds each
// source once (the model encodes it once: Seq2SeqBatch::src_rows).
// With shuffle = false, steps 1 and 4 are skipped (evaluation): batches come
// in corpus order within sorted windows, and the plan's indices restore order.
// Everything runs on the calling thread from one Rng, so a plan depends only
// on (corpus lengths, options, epoch), never on the thread count.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/data/encoded_corpus.h"
#include "attn/data/batch.h"
#include "attn/data/special_ids.h"

namespace attn::data {

struct BatchOptions {
  int64_t max_tokens = 4096;     // padded tokens per batch (see step 3)
  int64_t max_sentences = 0;     // pairs per batch; 0 = no limit
  int64_t sort_window = 65536;   // pairs sorted by length together (1 = no sorting)
  bool shuffle = true;           // shuffle pairs and batches (false for evaluation)
  uint64_t seed = 1;             // shuffle seed; epoch e uses a stream derived from (seed, e)
  SpecialIds specials;           // the vocabulary's: pad fills src and tgt_out after each length,
                                 // bos starts tgt_in, eos ends tgt_out
  bool group_sources = false;    // batch runs of pairs with one source together (see above)
};

class Batcher {
public:
  // Keeps a reference to `corpus`, which must outlive the batcher. Throws
  // std::invalid_argument when options are invalid, a source is empty, or a
  // single pair does not fit max_tokens (naming its corpus line; filter
  // lengths first).
  Batcher(const EncodedCorpus& corpus, const BatchOptions& options);

  // The batches of `epoch` as pair indices into the corpus: every pair
  // exactly once. [batches][batch_size]
  std::vector<std::vector<int64_t>> plan_epoch(uint64_t epoch) const;

  // The padded tensors of the pairs `indices` (float-encoded ids):
  //   src      [B, S]    source ids, pad after src_lengths[b]
  //   tgt_in   [B, T+1]  bos, target ids, pad after
  //   tgt_out  [B, T+1]  target ids, eos, pad after
  //   src_lengths [B], targets [B][len] (ids without BOS/EOS)
  // with S = longest source, T = longest target among `indices`.
  Seq2SeqBatch make_batch(const std::vector<int64_t>& indices) const;

  // The target tokens the loss counts for the pairs `indices`: each target's
  // length + 1 (its EOS), what make_batch(indices).targets would give.
  int64_t target_tokens(const std::vector<int64_t>& indices) const;

  // Padded cost of one pair: max(src_len, tgt_len + 1).
  int64_t cost(int64_t index) const;

private:
  // Unit u is the pairs [unit_start_[u], unit_start_[u + 1]).
  int64_t units() const { return int64_t(unit_start_.size()) - 1; }
  int64_t unit_cost(int64_t u) const;  // the widest pair's cost
  int64_t unit_pairs(int64_t u) const { return unit_start_[size_t(u + 1)] - unit_start_[size_t(u)]; }

  const EncodedCorpus& corpus_;
  BatchOptions options_;
  std::vector<int64_t> unit_start_;  // [units + 1]
};

}  // namespace attn::data
