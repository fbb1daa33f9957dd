// Text in, text out: SentencePiece-encodes raw sentences, decodes them in
// length-sorted batches with greedy or beam search, and detokenises the
// hypotheses. The model must be in eval mode (model.train(false)).
#pragma once
#include <string>
#include <vector>

#include "attn/data/vocab.h"
#include "attn/decode/search.h"

namespace attn::decode {

struct TranslateOptions {
  SearchOptions search;          // beam, n-best, length penalty, length limit
  int64_t batch_sentences = 64;  // sentences decoded together (sorted by length first)
  int64_t max_src_tokens = 250;  // longer sources are cut to this many pieces (0: no limit)
};

struct TranslatedHypothesis {
  std::string text;                       // detokenised
  std::vector<std::string> pieces;        // target pieces, without EOS
  double score = 0, log_prob = 0;         // see search.h
  bool finished = false;                  // ended with EOS
  std::vector<float> attention;           // [pieces + finished, src pieces] row-major (when search.alignments)
};

struct Translation {
  std::vector<std::string> src_pieces;        // source pieces fed to the model (empty for an empty line)
  std::vector<TranslatedHypothesis> hypotheses;  // n-best, best first; none for an empty line
};

// One translation per line, in order. An empty (or all-whitespace) line gives
// an empty Translation. Throws std::invalid_argument naming the 1-based line
// when a line is not valid UTF-8.
std::vector<Translation> translate_lines(const models::Seq2SeqModel& model, const data::SubwordVocab& src_vocab,
                                         const data::SubwordVocab& tgt_vocab, const std::vector<std::string>& lines,
                                         const TranslateOptions& options = {});

}  // namespace attn::decode
