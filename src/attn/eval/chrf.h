// chrF (Popović 2015, W15-3049) and chrF++ (Popović 2017, W17-4770) computed
// exactly as sacreBLEU 2.x does (sacrebleu/metrics/chrf.py). Defaults are
// sacreBLEU's chrF2: character n-grams 1..6, no word n-grams, beta 2,
// whitespace removed before extracting character n-grams, effective-order
// averaging (eps_smoothing off), case-sensitive.
//
// Per order n (character orders 1..char_order, then word orders 1..word_order),
// over the corpus: hyp_n, ref_n = n-gram counts, match_n = clipped matches.
//   effective order (default): P = mean over orders with hyp_n, ref_n > 0 of
//     match_n / hyp_n, R likewise with ref_n;  chrF = 100 (1+b²) P R / (b² P + R)
//   eps_smoothing: chrF = 100 * mean over all orders of F_beta(p_n, r_n),
//     with p_n, r_n = 1e-16 when undefined (chrF++.py / NLTK / Moses style)
// Characters are Unicode code points. With several references, each segment
// takes the statistics of the reference giving its best sentence-level score.
// Word n-grams (chrF++) split on whitespace, then split one ASCII punctuation
// mark off the end (or else the start) of each word longer than one char.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::eval {

struct ChrfOptions {
  int char_order = 6;          // character n-gram orders 1..char_order
  int word_order = 0;          // word n-gram orders 1..word_order (2 = chrF++)
  double beta = 2;             // recall weight: F_beta
  bool whitespace = false;     // keep whitespace inside character n-grams
  bool eps_smoothing = false;  // average per-order F scores instead of effective order
};

struct ChrfScore {
  double score = 0;   // in [0, 100]
  double beta = 2;
  int word_order = 0;
  int num_refs = 0;   // references per segment, -1 if it varies
  std::vector<int64_t> stats;  // [3 * (char_order + word_order)] (hyp, ref, match) per order

  // sacreBLEU's score line, e.g. "chrF2 = 59.73" or "chrF2++ = 49.00".
  std::string format() const;
};

// chrF of hyps[i] against refs[k][i] for every reference stream k (empty
// strings = no reference there). Throws std::invalid_argument when a stream's
// length differs from hyps', a segment has no reference, or text is not UTF-8.
ChrfScore corpus_chrf(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const ChrfOptions& options = {});

// chrF of one sentence against its references.
ChrfScore sentence_chrf(const std::string& hyp, const std::vector<std::string>& refs, const ChrfOptions& options = {});

// sacreBLEU's signature without the version field, e.g.
// "nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no".
std::string chrf_signature(const ChrfOptions& options, int num_refs);

}  // namespace attn::eval
