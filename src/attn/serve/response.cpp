#include "attn/serve/response.h"

#include <charconv>
#include <cstdlib>

namespace attn::serve {
namespace {

// The double whose shortest decimal is the float's shortest decimal: JSON then
// shows 0.25 or 0.1, not the float's binary value widened (0.10000000149011612).
double shortest(float v) {
  char buf[32];
  const auto end = std::to_chars(buf, buf + sizeof buf - 1, v).ptr;
  *end = 0;
  return std::strtod(buf, nullptr);
}

}  // namespace

nlohmann::ordered_json translation_json(const decode::Translation& t, bool alignments) {
  nlohmann::ordered_json j;
  const decode::TranslatedHypothesis* h = t.hypotheses.empty() ? nullptr : &t.hypotheses[0];
  j["translation"] = h ? h->text : "";
  j["src_tokens"] = t.src_pieces;
  j["tgt_tokens"] = h ? h->pieces : std::vector<std::string>{};
  j["score"] = h ? h->score : 0.0;
  if (alignments) {
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    const size_t S = t.src_pieces.size();
    if (h && S > 0)
      for (size_t r = 0; r + S <= h->attention.size(); r += S) {
        nlohmann::ordered_json row = nlohmann::ordered_json::array();
        for (size_t j = 0; j < S; ++j) row.push_back(shortest(h->attention[r + j]));
        rows.push_back(std::move(row));
      }
    j["weights"] = rows;
  }
  return j;
}

nlohmann::ordered_json caption_json(const decode::PieceCaption& c, const std::vector<std::string>& pieces,
                                    const std::string& caption, const decode::ImageModelInput& in) {
  const int cells = in.grid_h * in.grid_w;
  const decode::WordCaption words = decode::merge_pieces(pieces, c.attention, cells);
  nlohmann::ordered_json j;
  j["caption"] = caption;
  j["words"] = words.words;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (size_t r = 0; r < words.words.size(); ++r) {
    nlohmann::ordered_json row = nlohmann::ordered_json::array();
    for (int g = 0; g < cells; ++g) row.push_back(shortest(words.attention[r * size_t(cells) + size_t(g)]));
    rows.push_back(std::move(row));
  }
  j["attention"] = rows;
  j["grid"] = {in.grid_h, in.grid_w};
  j["image_size"] = {in.height, in.width};
  j["tgt_tokens"] = pieces;
  j["log_prob"] = c.log_prob;
  j["finished"] = c.finished;
  return j;
}

std::string error_body(const std::string& message, const std::string& field) {
  nlohmann::ordered_json j;
  j["error"] = message;
  j["field"] = field.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(field);
  return j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);  // a message may quote bad UTF-8
}

}  // namespace attn::serve
