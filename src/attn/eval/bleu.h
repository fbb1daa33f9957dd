// Corpus BLEU (Papineni et al., 2002) computed exactly as sacreBLEU 2.x does
// (sacrebleu/metrics/bleu.py), so the numbers are comparable with published
// sacreBLEU scores. Defaults are sacreBLEU's: tokenize=13a, smooth=exp,
// max n-gram order 4, case-sensitive, effective order off.
//
//   p_n  = clipped n-gram matches / hypothesis n-grams, summed over the corpus
//          (clip = max count of that n-gram in any one reference of the segment)
//   BP   = 1 if c >= r else exp(1 - r/c)   (c = hyp_len; r = sum over segments
//          of the reference length closest to the hypothesis length, the
//          shorter one on ties)
//   BLEU = BP * exp(mean_n log p_n) * 100
// Smoothing of zero matches (Chen & Cherry 2014, W14-3346):
//   exp   (NIST, mteval-v13a) the k-th order with no match gets 1 / (2^k * total)
//   floor zero-match orders get smooth_value / total
//   add-k orders n >= 2 add smooth_value to matches and totals
//   none  a zero-match order makes BLEU 0
// A corpus with no matching n-gram of any order scores 0 whatever the smoothing.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::eval {

enum class BleuTokenizer { k13a, kNone };           // "13a" | "none" (whitespace split)
enum class BleuSmooth { kExp, kFloor, kAddK, kNone };  // "exp" | "floor" | "add-k" | "none"

struct BleuOptions {
  BleuTokenizer tokenize = BleuTokenizer::k13a;  // tokenization applied to hyps and refs
  BleuSmooth smooth = BleuSmooth::kExp;          // zero-match smoothing
  double smooth_value = -1;  // floor / add-k value; < 0 means sacreBLEU's default (floor 0.1, add-k 1)
  int max_ngram_order = 4;   // n-gram orders 1..max_ngram_order
  bool effective_order = false;  // stop at the highest order with any hypothesis n-gram
                                 // (sacreBLEU's sentence-level setting; off for corpus BLEU)
};

// Sufficient statistics of one segment or (summed) of a corpus.
struct BleuStats {
  int64_t sys_len = 0;           // hypothesis tokens
  int64_t ref_len = 0;           // closest reference tokens
  std::vector<double> correct;   // [max_ngram_order] clipped matches per order
  std::vector<double> total;     // [max_ngram_order] hypothesis n-grams per order
};

struct BleuScore {
  double score = 0;               // BLEU in [0, 100]
  std::vector<double> counts;     // [max_ngram_order] matches (after add-k)
  std::vector<double> totals;     // [max_ngram_order] hypothesis n-grams (after add-k)
  std::vector<double> precisions; // [max_ngram_order] in percent, after smoothing
  double bp = 0;                  // brevity penalty
  double ratio = 0;               // hyp_len / ref_len (0 when ref_len is 0)
  int64_t sys_len = 0;            // hyp_len
  int64_t ref_len = 0;
  int num_refs = 0;               // references per segment, -1 if it varies

  // sacreBLEU's score line, e.g.
  // "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)"
  std::string format() const;
};

// BLEU of hyps[i] against refs[k][i] for every reference stream k (empty
// strings = no reference there). Throws std::invalid_argument when a stream's
// length differs from hyps', a segment has no reference, or text is not UTF-8.
BleuScore corpus_bleu(const std::vector<std::string>& hyps, const std::vector<std::vector<std::string>>& refs,
                      const BleuOptions& options = {});

// BLEU of one sentence against its references (consider effective_order = true).
BleuScore sentence_bleu(const std::string& hyp, const std::vector<std::string>& refs,
                        const BleuOptions& options = {});

// The score from sufficient statistics (sacreBLEU's BLEU.compute_bleu).
BleuScore compute_bleu(BleuStats stats, const BleuOptions& options = {});

// The tokens BLEU counts for one line: tokenizer applied after removing
// trailing whitespace (sacreBLEU's _preprocess_segment).
std::vector<std::string> bleu_tokens(const std::string& line, BleuTokenizer tokenize);

// sacreBLEU's signature without the version field, e.g.
// "nrefs:2|case:mixed|eff:no|tok:13a|smooth:exp".
std::string bleu_signature(const BleuOptions& options, int num_refs);

}  // namespace attn::eval
