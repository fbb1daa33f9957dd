#include "attn/eval/chrf.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "attn/data/utf8.h"
#include "attn/eval/references.h"

namespace attn::eval {

namespace {

using data::is_python_space;
using Counts = std::unordered_map<std::u32string, int64_t>;

// Character n-gram counts for orders 1..max_order, then word n-gram counts
// for orders 1..word_order: [char_order + word_order] maps.
struct Ngrams {
  std::vector<Counts> orders;
};

std::vector<std::u32string> split_words(const std::u32string& s) {
  std::vector<std::u32string> words;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_python_space(s[i])) ++i;
    size_t j = i;
    while (j < s.size() && !is_python_space(s[j])) ++j;
    if (j > i) words.push_back(s.substr(i, j - i));
    i = j;
  }
  return words;
}

bool is_ascii_punct(char32_t c) {  // Python's string.punctuation
  return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) ||
         (c >= 0x7B && c <= 0x7E);
}

// sacreBLEU's _remove_punctuation: one mark off the end, else off the start.
std::vector<std::u32string> chrf_words(const std::u32string& s) {
  std::vector<std::u32string> out;
  for (std::u32string& w : split_words(s)) {
    if (w.size() == 1) {
      out.push_back(std::move(w));
    } else if (is_ascii_punct(w.back())) {
      out.push_back(w.substr(0, w.size() - 1));
      out.push_back(w.substr(w.size() - 1));
    } else if (is_ascii_punct(w.front())) {
      out.push_back(w.substr(0, 1));
      out.push_back(w.substr(1));
    } else {
      out.push_back(std::move(w));
    }
  }
  return out;
}

Ngrams extract(const std::string& text, const ChrfOptions& o) {
  const std::u32string s = data::decode_utf8(text);
  Ngrams g;
  g.orders.resize(o.char_order + o.word_order);
  std::u32string chars;
  if (o.whitespace) {
    chars = s;
  } else {
    for (char32_t c : s)
      if (!is_python_space(c)) chars.push_back(c);
  }
  for (int n = 1; n <= o.char_order; ++n)
    for (size_t i = 0; i + n <= chars.size(); ++i) ++g.orders[n - 1][chars.substr(i, n)];
  if (o.word_order > 0) {
    const std::vector<std::u32string> words = chrf_words(s);
    for (int n = 1; n <= o.word_order; ++n)
      for (size_t i = 0; i + n <= words.size(); ++i) {
        std::u32string key = words[i];
        for (size_t j = i + 1; j < i + n; ++j) key.append(U" ").append(words[j]);
        ++g.orders[o.char_order + n - 1][key];
      }
  }
  return g;
}

// (hyp, ref, match) per order; hyp counts are 0 for an order where the
// reference has no n-gram (sacreBLEU's _get_match_statistics).
std::vector<int64_t> match_stats(const Ngrams& h, const Ngrams& r) {
  std::vector<int64_t> st;
  st.reserve(3 * h.orders.size());
  for (size_t k = 0; k < h.orders.size(); ++k) {
    int64_t hyp = 0, ref = 0, match = 0;
    for (const auto& [ng, c] : h.orders[k]) {
      hyp += c;
      auto it = r.orders[k].find(ng);
      if (it != r.orders[k].end()) match += std::min(c, it->second);
    }
    for (const auto& [ng, c] : r.orders[k]) ref += c;
    st.push_back(r.orders[k].empty() ? 0 : hyp);
    st.push_back(ref);
    st.push_back(match);
  }
  return st;
}

void check_options(const ChrfOptions& o) {
  if (o.char_order < 0 || o.word_order < 0 || o.char_order + o.word_order == 0)
    throw std::invalid_argument("chrF: need char_order >= 0, word_order >= 0 and at least one order, got " +
                                std::to_string(o.char_order) + ", " + std::to_string(o.word_order));
  if (!(o.beta > 0)) throw std::invalid_argument("chrF: beta must be > 0, got " + std::to_string(o.beta));
}

// sacreBLEU's _compute_f_score, in [0, 100].
double f_score(const std::vector<int64_t>& st, const ChrfOptions& o) {
  const double eps = 1e-16, factor = o.beta * o.beta;
  const int orders = o.char_order + o.word_order;
  double score = 0, avg_prec = 0, avg_rec = 0;
  int effective_order = 0;
  for (int i = 0; i < orders; ++i) {
    const double n_hyp = double(st[3 * i]), n_ref = double(st[3 * i + 1]), n_match = double(st[3 * i + 2]);
    const double prec = n_hyp > 0 ? n_match / n_hyp : eps;
    const double rec = n_ref > 0 ? n_match / n_ref : eps;
    const double denom = factor * prec + rec;
    score += denom > 0 ? (1 + factor) * prec * rec / denom : eps;
    if (n_hyp > 0 && n_ref > 0) {
      avg_prec += prec;
      avg_rec += rec;
      ++effective_order;
    }
  }
  if (o.eps_smoothing) return 100 * score / orders;
  if (effective_order == 0) return 0.0;
  avg_prec /= effective_order;
  avg_rec /= effective_order;
  if (avg_prec + avg_rec == 0) return 0.0;
  double f = (1 + factor) * avg_prec * avg_rec;
  f /= factor * avg_prec + avg_rec;
  return 100 * f;
}

}  // namespace

ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const ChrfOptions& options) {
  check_options(options);
  const SegmentReferences segs = collect_references("chrF", hyps, refs);
  const size_t width = 3 * size_t(options.char_order + options.word_order);
  std::vector<int64_t> sum(width, 0);
  for (size_t i = 0; i < hyps.size(); ++i) {
    const Ngrams h = extract(hyps[i], options);
    std::vector<int64_t> best;
    double best_f = -1;
    for (std::string_view r : segs.per_segment[i]) {
      std::vector<int64_t> st = match_stats(h, extract(std::string(r), options));
      const double f = f_score(st, options);
      if (f > best_f) {
        best_f = f;
        best = std::move(st);
      }
    }
    for (size_t k = 0; k < width; ++k) sum[k] += best[k];
  }
  ChrfScore out;
  out.score = f_score(sum, options);
  out.beta = options.beta;
  out.word_order = options.word_order;
  out.num_refs = segs.num_refs;
  out.stats = std::move(sum);
  return out;
}

ChrfScore sentence_chrf(const std::string& hyp, const std::vector<std::string>& refs, const ChrfOptions& options) {
  std::vector<std::vector<std::string>> streams;
  for (const std::string& r : refs) streams.push_back({r});
  return corpus_chrf({hyp}, streams, options);
}

std::string ChrfScore::format() const {
  char buf[64];
  std::snprintf(buf, sizeof buf, "chrF%g%s = %.2f", beta, std::string(size_t(word_order), '+').c_str(), score);
  return buf;
}

std::string chrf_signature(const ChrfOptions& options, int num_refs) {
  return "nrefs:" + nrefs_string(num_refs) + "|case:mixed|eff:" + (options.eps_smoothing ? "no" : "yes") +
         "|nc:" + std::to_string(options.char_order) + "|nw:" + std::to_string(options.word_order) +
         "|space:" + (options.whitespace ? "yes" : "no");
}

}  // namespace attn::eval
