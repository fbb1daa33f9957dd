// What a model's attention looks like over a test set (`attn translate
// --attention-stats FILE`): how sharp the weights are and, where the
// alignment is known without annotation, whether the argmax points at it.
//
// Sharpness: the entropy H = -sum_j w_j ln w_j (nats) of every target step's
// weights over the source pieces (EOS row included), averaged over the steps.
// A uniform row over L pieces has ln L; a one-hot row 0. Local-p's rows sum to
// less than 1 (its Gaussian) and local windows can hide every piece (an all-0
// row, entropy 0): the entropy is taken of the row as it is, renormalised
// when it sums to more than 0.
//
// Copy alignment: a target piece that occurs exactly once in the source and
// once in the hypothesis (joint vocabularies share pieces across languages:
// names, numbers, many nouns) has a known source position; the share of such
// steps whose largest weight lies on it. Pieces of fewer than 2 letters or
// digits (punctuation, "▁a") are left out: they recur without being copies.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace attn::decode {

struct AttentionStats {
  int64_t steps = 0;        // target rows counted
  double entropy_sum = 0;   // sum over them of H
  double max_weight_sum = 0;  // sum over them of max_j w_j (before renormalising)
  int64_t copy_steps = 0;   // rows of a copied piece (see above)
  int64_t copy_hits = 0;    // ... whose argmax is the copy's source position

  // One hypothesis: attention [rows, src_len] row-major (rows = tgt pieces, + 1 when finished).
  // Throws std::invalid_argument when the sizes do not fit.
  void add(const std::vector<float>& attention, const std::vector<std::string>& src_pieces,
           const std::vector<std::string>& tgt_pieces);

  // {"steps", "mean_entropy", "mean_max_weight", "copy_steps", "copy_argmax_share"} on one line
  std::string json() const;
};

}  // namespace attn::decode
