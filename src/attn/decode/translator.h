// Text in, text out: SentencePiece-encodes raw sentences, decodes them in
// length-sorted batches with greedy or beam search, and detokenises the
// hypotheses. The model must be in eval mode (model.train(false)).
#pragma once
#include <string>
#include <vector>

#include "attn/data/vocab.h"
#include "attn/decode/search.h"

namespace attn::decode {

// What happens to a line of more than max_src_tokens source pieces (the
// over-long line rule; `attn translate --long-lines`). The caller reports it:
// Translation::over_long_pieces says which lines it hit.
enum class LongLines {
  Truncate,  // translate the first max_src_tokens pieces
  Skip,      // no translation (an empty one, as for an empty line)
  Error,     // throw std::invalid_argument naming the line before decoding anything
};

struct TranslateOptions {
  SearchOptions search;          // beam, n-best, length penalty, length limit
  int64_t batch_sentences = 64;  // sentences decoded together (sorted by length first)
  int64_t max_src_tokens = 250;  // the over-long line rule applies above this many source pieces (0: no limit)
  LongLines long_lines = LongLines::Truncate;
  int64_t first_line = 1;        // the line number of lines[0] in messages (a caller translating in chunks)
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
  int64_t over_long_pieces = 0;  // the line's source pieces when over max_src_tokens (cut or skipped), else 0
};

// One translation per line, in order. An empty (or all-whitespace) line gives
// an empty Translation; an over-long line follows options.long_lines. Throws
// std::invalid_argument "line <n>: ..." when a line is not valid UTF-8 or is
// over-long under LongLines::Error.
std::vector<Translation> translate_lines(const models::Seq2SeqModel& model, const data::SubwordVocab& src_vocab,
                                         const data::SubwordVocab& tgt_vocab, const std::vector<std::string>& lines,
                                         const TranslateOptions& options = {});

}  // namespace attn::decode
