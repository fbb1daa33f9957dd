#include "attn/decode/alignment.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace attn::decode {

std::vector<int> piece_words(const std::vector<std::string>& pieces) {
  static const std::string kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's word boundary
  std::vector<int> words;
  int w = -1;
  for (const std::string& p : pieces) {
    if (w < 0 || p.compare(0, kSpace.size(), kSpace) == 0) ++w;
    words.push_back(w);
  }
  return words;
}

std::vector<std::pair<int, int>> hard_alignment(const std::vector<float>& attention, int64_t src_len,
                                                const std::vector<std::string>& src_pieces,
                                                const std::vector<std::string>& tgt_pieces) {
  const int64_t tgt = int64_t(tgt_pieces.size());
  if (src_len != int64_t(src_pieces.size()) || src_len <= 0 || int64_t(attention.size()) < tgt * src_len)
    throw std::invalid_argument("hard_alignment: " + std::to_string(attention.size()) + " weights for " +
                                std::to_string(tgt) + " target x " + std::to_string(src_pieces.size()) +
                                " source pieces (src_len " + std::to_string(src_len) + ")");
  const std::vector<int> sw = piece_words(src_pieces), tw = piece_words(tgt_pieces);
  std::vector<std::pair<int, int>> pairs;
  for (int64_t j = 0; j < tgt; ++j) {
    const float* row = attention.data() + j * src_len;
    const int64_t i = std::max_element(row, row + src_len) - row;
    pairs.emplace_back(sw[size_t(i)], tw[size_t(j)]);
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  return pairs;
}

std::string format_alignment(const std::vector<std::pair<int, int>>& pairs) {
  std::string s;
  for (const auto& [i, j] : pairs) s += (s.empty() ? "" : " ") + std::to_string(i) + "-" + std::to_string(j);
  return s;
}

std::string soft_alignment_json(const std::vector<float>& attention, int64_t src_len,
                                const std::vector<std::string>& src_pieces,
                                const std::vector<std::string>& tgt_pieces, bool finished) {
  nlohmann::ordered_json j;
  j["src"] = src_pieces;
  std::vector<std::string> tgt = tgt_pieces;
  if (finished) tgt.push_back("</s>");
  j["tgt"] = tgt;
  nlohmann::json rows = nlohmann::json::array();
  const int64_t n = src_len > 0 ? int64_t(attention.size()) / src_len : 0;
  for (int64_t r = 0; r < n; ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (int64_t c = 0; c < src_len; ++c)  // 4 decimals: enough for a heatmap, and short
      row.push_back(std::round(double(attention[size_t(r * src_len + c)]) * 1e4) / 1e4);
    rows.push_back(row);
  }
  j["weights"] = rows;
  return j.dump();
}

}  // namespace attn::decode
