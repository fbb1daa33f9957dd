#include "attn/data/encoded_corpus.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace attn::data {

void EncodedCorpus::check_sizes(const char* who) const {
  if (tgt.size() != src.size() || line.size() != src.size())
    throw std::invalid_argument(std::string(who) + ": corpus has " + std::to_string(src.size()) + " sources, " +
                                std::to_string(tgt.size()) + " targets and " + std::to_string(line.size()) +
                                " line numbers");
}

EncodedCorpus encode_corpus(const ParallelCorpus& corpus, const SubwordVocab& src_vocab,
                            const SubwordVocab& tgt_vocab) {
  if (corpus.src.size() != corpus.tgt.size())
    throw std::invalid_argument("encode_corpus: " + std::to_string(corpus.src.size()) + " sources but " +
                                std::to_string(corpus.tgt.size()) + " targets");
  EncodedCorpus e;
  e.src = src_vocab.encode_all(corpus.src);
  e.tgt = tgt_vocab.encode_all(corpus.tgt);
  e.line.resize(corpus.src.size());
  for (size_t i = 0; i < e.line.size(); ++i) e.line[i] = int64_t(i) + 1;
  return e;
}

EncodedCorpus filter_by_length(const EncodedCorpus& corpus, const LengthFilter& f, FilterReport* report) {
  if (f.max_src_tokens < 1 || f.max_tgt_tokens < 1 || f.max_ratio < 0)
    throw std::invalid_argument("filter_by_length: need max_src_tokens, max_tgt_tokens >= 1 and max_ratio >= 0, got " +
                                std::to_string(f.max_src_tokens) + ", " + std::to_string(f.max_tgt_tokens) + ", " +
                                std::to_string(f.max_ratio));
  corpus.check_sizes("filter_by_length");
  FilterReport r;
  EncodedCorpus out;
  for (int64_t i = 0; i < corpus.size(); ++i) {
    const int64_t s = int64_t(corpus.src[i].size()), t = int64_t(corpus.tgt[i].size());
    if (f.drop_empty && (s == 0 || t == 0)) {
      ++r.empty;
    } else if (s > f.max_src_tokens || t > f.max_tgt_tokens) {
      ++r.too_long;
    } else if (f.max_ratio > 0 && double(std::max(s, t)) / double(std::max<int64_t>(std::min(s, t), 1)) > f.max_ratio) {
      ++r.bad_ratio;
    } else {
      ++r.kept;
      out.src.push_back(corpus.src[i]);
      out.tgt.push_back(corpus.tgt[i]);
      out.line.push_back(corpus.line[i]);
    }
  }
  if (report) *report = r;
  return out;
}

}  // namespace attn::data
