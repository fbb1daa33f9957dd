// A vocabulary shortlist (Marian's lexical shortlist, CTranslate2's
// vocabulary map): the target pieces a batch of sources may translate to, so
// that a search computes the output layer over those rows only
// (StepDecoder::restrict_vocabulary) instead of the whole vocabulary.
//
// The candidates of a batch: the `frequent` most frequent target pieces of the
// training data, EOS, and for each source piece of the batch its `per_source`
// most likely translations p(t|s), learnt from the training corpus's word
// alignment (IBM Model 1, train/lexicon.h).
//
// The lexicon file (RUN/shortlist.tsv, written by `attn shortlist`): UTF-8
// lines of tab-separated fields, pieces spelled as the run's vocabularies do:
//   # ...                                   a comment
//   frequent <tgt piece> <count>            most frequent first
//   lex <src piece> <tgt piece> <p(t|s)>    by source piece, most likely first
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "attn/data/vocab.h"
#include "attn/tensor/tensor.h"

namespace attn::decode {

struct Lexicon {
  int64_t src_vocab = 0, tgt_vocab = 0;
  std::vector<std::pair<int, int64_t>> frequent;        // (target id, count in the training targets), most first
  std::vector<std::vector<std::pair<int, float>>> best;  // [src_vocab]: (target id, p(t|s)), most likely first
};

// Writes `lexicon` to `path` (replaced atomically), `comment` lines first as "# ...".
void write_lexicon(const std::string& path, const Lexicon& lexicon, const data::SubwordVocab& src_vocab,
                   const data::SubwordVocab& tgt_vocab, const std::vector<std::string>& comment);
// Reads a lexicon file against the run's vocabularies. Throws
// std::runtime_error "<path>:<line>: ..." for a malformed line, an unknown
// piece, a probability outside [0, 1] or a list out of order.
Lexicon read_lexicon(const std::string& path, const data::SubwordVocab& src_vocab,
                     const data::SubwordVocab& tgt_vocab);

class Shortlist {
public:
  // per_source >= 1 translations of each source piece, the `frequent` >= 0 most
  // frequent targets, and `eos`, always. Throws std::invalid_argument for sizes out of range.
  Shortlist(const Lexicon& lexicon, int64_t per_source, int64_t frequent, int eos);

  // src [B, S] ids with lengths [B] in [1, S] -> the sorted target ids the
  // batch may produce. Throws std::invalid_argument for an id outside the source vocabulary.
  std::vector<int> candidates(const Tensor& src, const std::vector<int64_t>& lengths) const;

  int64_t per_source() const { return per_source_; }
  int64_t frequent() const { return int64_t(always_.size()); }  // including EOS

private:
  int64_t tgt_vocab_ = 0, per_source_ = 0;
  std::vector<int> always_;                // the frequent targets and EOS
  std::vector<std::vector<int>> by_src_;  // [src_vocab]: its per_source best targets
};

}  // namespace attn::decode
