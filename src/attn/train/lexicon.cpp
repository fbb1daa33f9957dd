// IBM Model 1 over a parallel corpus of piece ids (see the header).
//
// p(t|s) is kept only for the pairs (s, t) that occur together in some
// sentence pair: a CSR table, row s holding its targets sorted, found by
// binary search. Per sentence pair and iteration, each target t_j's
// alignment posterior over the source pieces (and NULL) is
// p(t_j|s_i) / sum_i' p(t_j|s_i'), added to the expected counts c(s_i, t_j);
// p(t|s) = c(s, t) / sum_t' c(s, t') after the pass.
#include "attn/train/lexicon.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>

namespace attn::train {
namespace {

// The co-occurring pairs as CSR rows: row s (source id, or src_vocab for NULL) its sorted targets.
struct PairTable {
  std::vector<int64_t> start;  // [rows + 1]
  std::vector<int> tgt;        // [pairs]

  int64_t find(int64_t s, int t) const {
    const auto first = tgt.begin() + start[size_t(s)], last = tgt.begin() + start[size_t(s) + 1];
    return int64_t(std::lower_bound(first, last, t) - tgt.begin());
  }
};

void check_ids(const std::vector<int>& ids, int64_t vocab, int64_t pair, const char* side) {
  for (int id : ids)
    if (id < 0 || id >= vocab)
      throw std::invalid_argument("learn_lexicon: " + std::string(side) + " id " + std::to_string(id) + " of pair " +
                                  std::to_string(pair) + " outside [0, " + std::to_string(vocab) + ")");
}

PairTable co_occurrences(const data::EncodedCorpus& c, int64_t src_vocab, int64_t tgt_vocab) {
  const int64_t rows = src_vocab + 1;  // + NULL
  std::vector<std::vector<int>> by_src(static_cast<size_t>(rows));
  for (int64_t p = 0; p < c.size(); ++p) {
    const auto &src = c.src[size_t(p)], &tgt = c.tgt[size_t(p)];
    check_ids(src, src_vocab, p, "source");
    check_ids(tgt, tgt_vocab, p, "target");
    if (src.empty() || tgt.empty()) continue;
    for (int t : tgt) by_src[size_t(src_vocab)].push_back(t);
    for (int s : src)
      for (int t : tgt) by_src[size_t(s)].push_back(t);
  }
  PairTable table;
  table.start.push_back(0);
  for (std::vector<int>& targets : by_src) {
    std::sort(targets.begin(), targets.end());
    targets.erase(std::unique(targets.begin(), targets.end()), targets.end());
    table.tgt.insert(table.tgt.end(), targets.begin(), targets.end());
    table.start.push_back(int64_t(table.tgt.size()));
    std::vector<int>().swap(targets);
  }
  return table;
}

// One EM pass: the expected counts under prob -> the new prob (in place).
void em_pass(const data::EncodedCorpus& c, const PairTable& table, int64_t null_row, std::vector<float>& prob) {
  std::vector<double> count(prob.size(), 0.0);
  std::vector<int64_t> at;   // the pair indices of one target piece's candidates
  std::vector<double> post;  // their p(t|s)
  for (int64_t p = 0; p < c.size(); ++p) {
    const auto &src = c.src[size_t(p)], &tgt = c.tgt[size_t(p)];
    if (src.empty() || tgt.empty()) continue;
    for (int t : tgt) {
      at.clear(), post.clear();
      at.push_back(table.find(null_row, t));
      for (int s : src) at.push_back(table.find(s, t));
      double total = 0;
      for (int64_t i : at) post.push_back(prob[size_t(i)]), total += post.back();
      if (total <= 0) continue;
      for (size_t j = 0; j < at.size(); ++j) count[size_t(at[j])] += post[j] / total;
    }
  }
  for (size_t s = 0; s + 1 < table.start.size(); ++s) {
    double total = 0;
    for (int64_t i = table.start[s]; i < table.start[s + 1]; ++i) total += count[size_t(i)];
    for (int64_t i = table.start[s]; i < table.start[s + 1]; ++i)
      prob[size_t(i)] = total > 0 ? float(count[size_t(i)] / total) : 0.0f;
  }
}

}  // namespace

decode::Lexicon learn_lexicon(const data::EncodedCorpus& corpus, int64_t src_vocab, int64_t tgt_vocab,
                              const LexiconOptions& o) {
  if (o.iterations < 1 || o.per_source < 1 || o.frequent < 0)
    throw std::invalid_argument("learn_lexicon: iterations and per_source must be >= 1, frequent >= 0");
  const PairTable table = co_occurrences(corpus, src_vocab, tgt_vocab);
  std::vector<float> prob(table.tgt.size(), 1.0f);  // uniform: only the ratios within a sentence matter
  for (int it = 0; it < o.iterations; ++it) em_pass(corpus, table, src_vocab, prob);

  decode::Lexicon lex;
  lex.src_vocab = src_vocab, lex.tgt_vocab = tgt_vocab;
  lex.best.resize(size_t(src_vocab));
  std::vector<int64_t> order;
  for (int64_t s = 0; s < src_vocab; ++s) {
    order.resize(size_t(table.start[size_t(s) + 1] - table.start[size_t(s)]));
    std::iota(order.begin(), order.end(), table.start[size_t(s)]);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return prob[size_t(a)] > prob[size_t(b)]; });
    for (int64_t i : order) {
      if (int64_t(lex.best[size_t(s)].size()) >= o.per_source || prob[size_t(i)] < o.min_prob) break;
      lex.best[size_t(s)].emplace_back(table.tgt[size_t(i)], prob[size_t(i)]);
    }
  }
  std::vector<int64_t> counts(size_t(tgt_vocab), 0);
  for (const auto& tgt : corpus.tgt)
    for (int t : tgt) ++counts[size_t(t)];
  std::vector<int> ids(static_cast<size_t>(tgt_vocab));
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return counts[size_t(a)] > counts[size_t(b)]; });
  for (int t : ids)
    if (int64_t(lex.frequent.size()) < o.frequent && counts[size_t(t)] > 0) lex.frequent.emplace_back(t, counts[size_t(t)]);
  return lex;
}

}  // namespace attn::train
