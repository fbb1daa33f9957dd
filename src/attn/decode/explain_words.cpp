// attn explain --words: an explanation over SentencePiece pieces merged into
// words (the rule: explain.h merge_words, and docs/explain-and-figures.md, "attn explain").
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "attn/decode/alignment.h"
#include "attn/decode/explain.h"

namespace attn::decode {
namespace {

using json = nlohmann::json;

const json& field(const json& j, const char* key) {
  if (!j.is_object() || !j.contains(key))
    throw std::invalid_argument(std::string("merge_words: the explanation has no field \"") + key + "\"");
  return j.at(key);
}

// Groups of consecutive indices, one per word: [first, last) pairs.
std::vector<std::pair<size_t, size_t>> word_spans(const std::vector<std::string>& pieces) {
  const std::vector<int> w = piece_words(pieces);
  std::vector<std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < w.size(); ++i) {
    if (i == 0 || w[i] != w[i - 1]) spans.emplace_back(i, i);
    spans.back().second = i + 1;
  }
  return spans;
}

// A word's text: its pieces concatenated.
std::string join(const std::vector<std::string>& pieces, std::pair<size_t, size_t> span) {
  std::string s;
  for (size_t i = span.first; i < span.second; ++i) s += pieces[i];
  return s;
}

// One step's source columns merged: weights summed, scores log sum exp over
// the visible pieces (null when none is visible, or the model gives no scores).
void merge_columns(const json& step, const std::vector<std::pair<size_t, size_t>>& src, std::vector<double>& weights,
                   std::vector<std::optional<double>>& scores) {
  const json& w = field(step, "weights");
  const json& sc = field(step, "scores");
  weights.assign(src.size(), 0.0);
  scores.assign(src.size(), std::nullopt);
  for (size_t k = 0; k < src.size(); ++k) {
    double mx = -std::numeric_limits<double>::infinity(), sum = 0;
    for (size_t i = src[k].first; i < src[k].second; ++i) {
      weights[k] += w.at(i).get<double>();
      if (!sc.is_null() && !sc.at(i).is_null()) mx = std::max(mx, sc.at(i).get<double>());
    }
    if (mx == -std::numeric_limits<double>::infinity()) continue;
    for (size_t i = src[k].first; i < src[k].second; ++i)
      if (!sc.at(i).is_null()) sum += std::exp(sc.at(i).get<double>() - mx);
    scores[k] = mx + std::log(sum);
  }
}

// The steps [first, last) of one target word as one step (t: the word's 1-based index).
json merge_steps(const json& steps, std::pair<size_t, size_t> span, size_t t,
                 const std::vector<std::pair<size_t, size_t>>& src, const std::string& chosen) {
  const size_t n = span.second - span.first;
  std::vector<double> weights(src.size(), 0.0), score_sum(src.size(), 0.0), w;
  std::vector<int> score_count(src.size(), 0);
  std::vector<std::optional<double>> sc;
  double prob = 1;
  json window = nullptr;
  for (size_t s = span.first; s < span.second; ++s) {
    const json& step = steps.at(s);
    merge_columns(step, src, w, sc);
    for (size_t k = 0; k < src.size(); ++k) {
      weights[k] += w[k] / double(n);
      if (sc[k]) score_sum[k] += *sc[k], ++score_count[k];
    }
    prob *= field(step, "chosen_prob").get<double>();
    const json& win = field(step, "window_range");
    if (!win.is_null())
      window = window.is_null() ? win
                                : json::array({std::min(window[0].get<int64_t>(), win[0].get<int64_t>()),
                                               std::max(window[1].get<int64_t>(), win[1].get<int64_t>())});
  }
  json out = steps.at(span.first);  // query, norms, position, top_k: the word's first piece's
  out["t"] = t;
  json scores = json::array();
  for (size_t k = 0; k < src.size(); ++k)
    scores.push_back(score_count[k] ? json(score_sum[k] / score_count[k]) : json(nullptr));
  if (!field(steps.at(span.first), "scores").is_null()) out["scores"] = scores;  // else null, as the model gave
  out["weights"] = weights;
  out["window_range"] = window;
  out["chosen"] = chosen;
  out["chosen_prob"] = prob;
  return out;
}

// The encoder's [S][S] self-attention over pieces -> over words: a word's
// row the mean of its pieces' rows, a word's column the sum of its pieces' columns.
json merge_self_attention(const json& self, const std::vector<std::pair<size_t, size_t>>& src) {
  const json& rows = field(self, "weights");
  json merged = json::array();
  for (const auto& r : src) {
    std::vector<double> row(src.size(), 0.0);
    for (size_t i = r.first; i < r.second; ++i)
      for (size_t k = 0; k < src.size(); ++k)
        for (size_t j = src[k].first; j < src[k].second; ++j)
          row[k] += rows.at(i).at(j).get<double>() / double(r.second - r.first);
    merged.push_back(row);
  }
  json out = self;
  out["weights"] = merged;
  return out;
}

}  // namespace

json merge_words(const json& e) {
  const auto src_pieces = field(e, "src_tokens").get<std::vector<std::string>>();
  const auto tgt_pieces = field(e, "tgt_tokens").get<std::vector<std::string>>();
  const json& steps = field(e, "steps");
  if (!steps.is_array() || (steps.size() != tgt_pieces.size() && steps.size() != tgt_pieces.size() + 1))
    throw std::invalid_argument("merge_words: " + std::to_string(steps.size()) + " steps for " +
                                std::to_string(tgt_pieces.size()) + " target tokens (expects tokens or tokens + 1)");
  std::vector<std::pair<size_t, size_t>> src;  // an image's cells are not pieces: one column each
  if (e.contains("grid"))
    for (size_t i = 0; i < src_pieces.size(); ++i) src.emplace_back(i, i + 1);
  else
    src = word_spans(src_pieces);
  auto tgt = word_spans(tgt_pieces);
  json out = e;
  json src_words = json::array(), tgt_words = json::array(), merged = json::array();
  for (const auto& s : src) src_words.push_back(join(src_pieces, s));
  for (const auto& s : tgt) tgt_words.push_back(join(tgt_pieces, s));
  for (size_t k = 0; k < tgt.size(); ++k) merged.push_back(merge_steps(steps, tgt[k], k + 1, src, tgt_words[k]));
  if (steps.size() > tgt_pieces.size())  // the EOS step: its own word
    merged.push_back(merge_steps(steps, {tgt_pieces.size(), steps.size()}, tgt.size() + 1, src,
                                 field(steps.back(), "chosen").get<std::string>()));
  out["src_tokens"] = src_words;
  out["tgt_tokens"] = tgt_words;
  out["steps"] = merged;
  if (e.contains("self_attention")) out["self_attention"] = merge_self_attention(e.at("self_attention"), src);
  return out;
}

}  // namespace attn::decode
