#include "attn/decode/attention_stats.h"

#include <cctype>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace attn::decode {
namespace {

// letters or digits in a piece (bytes of a multi-byte UTF-8 character count once)
int word_chars(const std::string& piece) {
  int n = 0;
  for (unsigned char c : piece) n += std::isalnum(c) || c >= 0xC0 ? 1 : 0;  // ASCII alnum, or a UTF-8 lead byte
  return n - (piece.rfind("\xE2\x96\x81", 0) == 0 ? 1 : 0);              // "▁" is one lead byte, not a letter
}

// piece -> its index if it occurs exactly once in `pieces`, else -1
std::map<std::string, int> unique_positions(const std::vector<std::string>& pieces) {
  std::map<std::string, int> pos;
  for (size_t i = 0; i < pieces.size(); ++i) {
    auto [it, fresh] = pos.emplace(pieces[i], int(i));
    if (!fresh) it->second = -1;
  }
  return pos;
}

}  // namespace

void AttentionStats::add(const std::vector<float>& attention, const std::vector<std::string>& src_pieces,
                         const std::vector<std::string>& tgt_pieces) {
  const int64_t S = int64_t(src_pieces.size());
  if (S == 0) return;
  const int64_t rows = int64_t(attention.size()) / S;
  if (int64_t(attention.size()) != rows * S || rows < int64_t(tgt_pieces.size()) || rows > int64_t(tgt_pieces.size()) + 1)
    throw std::invalid_argument("attention stats: " + std::to_string(attention.size()) + " weights for " +
                                std::to_string(S) + " source and " + std::to_string(tgt_pieces.size()) +
                                " target pieces");
  const std::map<std::string, int> src_pos = unique_positions(src_pieces), tgt_pos = unique_positions(tgt_pieces);
  for (int64_t r = 0; r < rows; ++r) {
    const float* w = attention.data() + r * S;
    double sum = 0, mx = 0;
    int64_t arg = 0;
    for (int64_t j = 0; j < S; ++j) {
      sum += w[j];
      if (w[j] > mx) mx = w[j], arg = j;
    }
    double h = 0;
    if (sum > 0)
      for (int64_t j = 0; j < S; ++j)
        if (w[j] > 0) h -= (w[j] / sum) * std::log(w[j] / sum);
    ++steps, entropy_sum += h, max_weight_sum += mx;
    if (r >= int64_t(tgt_pieces.size())) continue;  // the EOS row
    const std::string& piece = tgt_pieces[size_t(r)];
    const auto s = src_pos.find(piece);
    if (s == src_pos.end() || s->second < 0 || tgt_pos.at(piece) < 0 || word_chars(piece) < 2) continue;
    ++copy_steps;
    copy_hits += sum > 0 && arg == s->second ? 1 : 0;
  }
}

std::string AttentionStats::json() const {
  nlohmann::ordered_json j;
  j["steps"] = steps;
  j["mean_entropy"] = steps ? entropy_sum / double(steps) : 0.0;
  j["mean_max_weight"] = steps ? max_weight_sum / double(steps) : 0.0;
  j["copy_steps"] = copy_steps;
  j["copy_argmax_share"] = copy_steps ? double(copy_hits) / double(copy_steps) : 0.0;
  return j.dump();
}

}  // namespace attn::decode
