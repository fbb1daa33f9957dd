// Alignments from attention weights: the soft matrix as JSON, and hard word
// alignments ("i-j" pairs, source word i with target word j, 0-based, the
// Moses / fast_align convention).
//
// Words are SentencePiece words: a piece that starts with "▁" (U+2581) begins
// a new word, so word k of the pieces is word k of the detokenised text split
// at spaces.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attn::decode {

// Word index of every piece: [pieces] -> [pieces] (first piece is word 0).
std::vector<int> piece_words(const std::vector<std::string>& pieces);

// For each target piece j (rows 0..tgt_pieces-1 of `attention` [rows, src_len],
// row-major; a trailing EOS row is ignored) the source piece with the largest
// weight, lifted to words: sorted unique (source word, target word) pairs.
// Throws std::invalid_argument when the sizes do not fit.
std::vector<std::pair<int, int>> hard_alignment(const std::vector<float>& attention, int64_t src_len,
                                                const std::vector<std::string>& src_pieces,
                                                const std::vector<std::string>& tgt_pieces);

// "0-0 1-2 2-1"
std::string format_alignment(const std::vector<std::pair<int, int>>& pairs);

// {"src": [...pieces], "tgt": [...pieces, "</s>"?], "weights": [[...] per target row]}
// one line of JSON; rows = attention.size() / src_len.
std::string soft_alignment_json(const std::vector<float>& attention, int64_t src_len,
                                const std::vector<std::string>& src_pieces,
                                const std::vector<std::string>& tgt_pieces, bool finished);

}  // namespace attn::decode
