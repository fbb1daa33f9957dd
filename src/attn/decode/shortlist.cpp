// The vocabulary shortlist (see the header).
#include "attn/decode/shortlist.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "attn/data/line_reader.h"

namespace attn::decode {
namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1)
    fields.push_back(line.substr(start, tab - start));
  fields.push_back(line.substr(start));
  return fields;
}

std::string fmt_prob(float p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", double(p));
  return buf;
}

// One line's reader: fields checked against the vocabularies, errors "<path>:<line>: ...".
struct LineParser {
  const std::string& path;
  const data::SubwordVocab& src_vocab;
  const data::SubwordVocab& tgt_vocab;
  int64_t line = 0;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error(path + ":" + std::to_string(line) + ": " + what);
  }
  int piece(const data::SubwordVocab& v, const std::string& text, const char* side) const {
    const int id = v.id(text);
    if (id == v.specials().unk && text != v.piece(v.specials().unk))
      fail(std::string("unknown ") + side + " piece \"" + text + "\" (not in the run's " + side + " vocabulary)");
    return id;
  }
  double number(const std::string& text, const char* what) const {
    size_t used = 0;
    double x = 0;
    try {
      x = std::stod(text, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != text.size() || !std::isfinite(x)) fail(std::string("bad ") + what + " \"" + text + "\"");
    return x;
  }
  void parse(const std::string& text, Lexicon& lex, int& last_src) {
    if (text.empty() || text[0] == '#') return;
    const std::vector<std::string> f = split_tabs(text);
    if (f[0] == "frequent" && f.size() == 3) {
      const double count = number(f[2], "count");
      if (count < 0 || count != std::floor(count)) fail("count \"" + f[2] + "\" is not a whole number >= 0");
      if (!lex.frequent.empty() && int64_t(count) > lex.frequent.back().second)
        fail("frequent pieces out of order (a count above the one before)");
      lex.frequent.emplace_back(piece(tgt_vocab, f[1], "target"), int64_t(count));
    } else if (f[0] == "lex" && f.size() == 4) {
      const int s = piece(src_vocab, f[1], "source");
      const double p = number(f[3], "probability");
      if (p < 0 || p > 1) fail("probability " + f[3] + " outside [0, 1]");
      auto& list = lex.best[size_t(s)];
      if (s != last_src && !list.empty()) fail("source piece \"" + f[1] + "\" appears in two runs of lines");
      if (!list.empty() && float(p) > list.back().second) fail("translations of \"" + f[1] + "\" out of order");
      list.emplace_back(piece(tgt_vocab, f[2], "target"), float(p));
      last_src = s;
    } else {
      fail("expected \"frequent<TAB>piece<TAB>count\" or \"lex<TAB>source<TAB>target<TAB>p\"");
    }
  }
};

}  // namespace

void write_lexicon(const std::string& path, const Lexicon& lexicon, const data::SubwordVocab& src_vocab,
                   const data::SubwordVocab& tgt_vocab, const std::vector<std::string>& comment) {
  std::vector<std::string> lines;
  for (const std::string& c : comment) lines.push_back("# " + c);
  for (const auto& [t, count] : lexicon.frequent)
    lines.push_back("frequent\t" + tgt_vocab.piece(t) + "\t" + std::to_string(count));
  for (size_t s = 0; s < lexicon.best.size(); ++s)
    for (const auto& [t, p] : lexicon.best[s])
      lines.push_back("lex\t" + src_vocab.piece(int(s)) + "\t" + tgt_vocab.piece(t) + "\t" + fmt_prob(p));
  data::write_lines(path, lines);
}

Lexicon read_lexicon(const std::string& path, const data::SubwordVocab& src_vocab,
                     const data::SubwordVocab& tgt_vocab) {
  Lexicon lex;
  lex.src_vocab = src_vocab.size(), lex.tgt_vocab = tgt_vocab.size();
  lex.best.resize(size_t(lex.src_vocab));
  LineParser parser{path, src_vocab, tgt_vocab};
  int last_src = -1;
  for (const std::string& text : data::read_lines(path)) {
    ++parser.line;
    parser.parse(text, lex, last_src);
  }
  return lex;
}

Shortlist::Shortlist(const Lexicon& lexicon, int64_t per_source, int64_t frequent, int eos)
    : tgt_vocab_(lexicon.tgt_vocab), per_source_(per_source) {
  if (per_source < 1) throw std::invalid_argument("shortlist: per_source " + std::to_string(per_source) + " < 1");
  if (frequent < 0) throw std::invalid_argument("shortlist: frequent " + std::to_string(frequent) + " < 0");
  if (eos < 0 || eos >= tgt_vocab_) throw std::invalid_argument("shortlist: EOS outside the target vocabulary");
  always_.push_back(eos);
  for (int64_t i = 0; i < std::min<int64_t>(frequent, int64_t(lexicon.frequent.size())); ++i)
    always_.push_back(lexicon.frequent[size_t(i)].first);
  by_src_.resize(lexicon.best.size());
  for (size_t s = 0; s < lexicon.best.size(); ++s)
    for (int64_t j = 0; j < std::min<int64_t>(per_source, int64_t(lexicon.best[s].size())); ++j)
      by_src_[s].push_back(lexicon.best[s][size_t(j)].first);
}

std::vector<int> Shortlist::candidates(const Tensor& src, const std::vector<int64_t>& lengths) const {
  if (!src.defined() || src.dim() != 2 || int64_t(lengths.size()) != src.size(0))
    throw std::invalid_argument("shortlist: expects source ids [B, S] and B lengths (a text model's input)");
  std::vector<char> keep(size_t(tgt_vocab_), 0);
  for (int t : always_) keep[size_t(t)] = 1;
  const int64_t S = src.size(1), src_vocab = int64_t(by_src_.size());
  for (size_t b = 0; b < lengths.size(); ++b)
    for (int64_t j = 0; j < std::min(lengths[b], S); ++j) {
      const int64_t s = int64_t(src.data()[int64_t(b) * S + j]);
      if (s < 0 || s >= src_vocab)
        throw std::invalid_argument("shortlist: source id " + std::to_string(s) + " outside the lexicon's " +
                                    std::to_string(src_vocab) + " pieces");
      for (int t : by_src_[size_t(s)]) keep[size_t(t)] = 1;
    }
  std::vector<int> ids;
  for (int64_t t = 0; t < tgt_vocab_; ++t)
    if (keep[size_t(t)]) ids.push_back(int(t));
  return ids;
}

}  // namespace attn::decode
