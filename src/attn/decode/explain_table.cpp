// attn explain --format text: an explanation object as tables, one per
// decoder step, in the order the tutorials walk through a step: the query,
// each source token's alignment score and softmax weight, the context vector,
// the next-token distribution and the chosen token.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "attn/data/utf8.h"
#include "attn/decode/explain.h"

namespace attn::decode {
namespace {

using json = nlohmann::json;

std::string fixed(double x, int decimals = 3) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, x);
  return buf;
}

// `s` padded with spaces to `width` code points (tokens are UTF-8: "▁" is 3 bytes, 1 column)
std::string pad(const std::string& s, size_t width) {
  const size_t cols = data::decode_utf8(s).size();
  return cols >= width ? s : s + std::string(width - cols, ' ');
}

// A bar of the weight: one '#' per 1/40, at least one for a weight above 0.5/40.
std::string bar(double w) { return std::string(size_t(std::lround(std::max(0.0, w) * 40)), '#'); }

// A number of the step that may be null (an internal the model does not give): "-" then.
std::string fixed_or_dash(const json& x) { return x.is_null() ? "-" : fixed(x.get<double>()); }

// Score j of the step: "masked" where hidden, "-" when the model gives no scores.
std::string score_text(const json& s, size_t j, int decimals) {
  const json& scores = s.at("scores");
  if (scores.is_null()) return "-";
  return scores[j].is_null() ? "masked" : fixed(scores[j].get<double>(), decimals);
}

// "t=1  query |q| = ...  context |c| = ..."
std::string step_head(const json& s) {
  return "t=" + std::to_string(s.at("t").get<int64_t>()) + "  query |q| = " + fixed_or_dash(s.at("query_norm")) +
         "  context |c| = " + fixed_or_dash(s.at("context_norm"));
}

void step_table(std::ostream& out, const json& s, const json& src, size_t width) {
  out << step_head(s);
  if (!s.at("window_range").is_null())
    out << "  window [" << s.at("window_range")[0].get<int64_t>() << ", " << s.at("window_range")[1].get<int64_t>()
        << ")";
  if (!s.at("position").is_null()) out << "  p_t = " << fixed(s.at("position").get<double>());
  out << "\n  " << pad("source", width) << "     score  weight\n";
  for (size_t j = 0; j < src.size(); ++j) {
    const double w = s.at("weights")[j].get<double>();
    const std::string score = score_text(s, j, 3);
    out << "  " << pad(src[j].get<std::string>(), width) << " " << std::string(score.size() < 9 ? 9 - score.size() : 0, ' ')
        << score << "  " << fixed(w) << "  " << bar(w) << "\n";
  }
  out << "  top " << s.at("top_k").size() << ":";
  for (const json& c : s.at("top_k"))
    out << "  " << c.at("token").get<std::string>() << " " << fixed(c.at("prob").get<double>());
  out << "\n  chosen: " << s.at("chosen").get<std::string>() << "  p = " << fixed(s.at("chosen_prob").get<double>())
      << "\n\n";
}

// An image's step: the scores and the weights as Gh x Gw grids side by side
// (row 0 at the top, as the picture), then the cell with the most weight.
void grid_step_table(std::ostream& out, const json& s, const json& src, int gh, int gw) {
  out << step_head(s) << "\n";
  const size_t cell = 8, width = size_t(gw) * cell;
  out << "  " << pad("scores", width) << "   weights\n";
  size_t best = 0;
  for (int r = 0; r < gh; ++r) {
    std::string scores, weights;
    for (int c = 0; c < gw; ++c) {
      const size_t g = size_t(r) * size_t(gw) + size_t(c);
      const std::string x = score_text(s, g, 2);
      scores += std::string(cell > x.size() ? cell - x.size() : 1, ' ') + x;
      weights += " " + fixed(s.at("weights")[g].get<double>());
      if (s.at("weights")[g].get<double>() > s.at("weights")[best].get<double>()) best = g;
    }
    out << "  " << pad(scores, width) << "  " << weights << "\n";
  }
  out << "  most weight: " << src[best].get<std::string>() << " " << fixed(s.at("weights")[best].get<double>()) << "\n";
  out << "  top " << s.at("top_k").size() << ":";
  for (const json& c : s.at("top_k"))
    out << "  " << c.at("token").get<std::string>() << " " << fixed(c.at("prob").get<double>());
  out << "\n  chosen: " << s.at("chosen").get<std::string>() << "  p = " << fixed(s.at("chosen_prob").get<double>())
      << "\n\n";
}

}  // namespace

std::string explanation_table(const json& e) {
  std::ostringstream out;
  out << "model " << e.at("model").get<std::string>() << ", score " << e.at("score").get<std::string>();
  if (!e.at("window").is_null())
    out << ", window " << e.at("window").at("kind").get<std::string>() << " D = " << e.at("window").at("D").get<int64_t>();
  out << ", beam " << e.at("beam").get<int>() << "\n";
  const json& src = e.at("src_tokens");
  if (e.contains("grid")) {
    const int gh = e.at("grid")[0].get<int>(), gw = e.at("grid")[1].get<int>();
    out << "image: " << e.value("image", std::string("?")) << "  (attention over " << gh << " x " << gw
        << " cells, " << e.at("image_attention").get<std::string>() << ")\ncaption: " << e.at("caption").get<std::string>()
        << "\n\n";
    for (const json& s : e.at("steps")) grid_step_table(out, s, src, gh, gw);
    return out.str();
  }
  out << "source:";
  size_t width = 6;  // "source"
  for (const json& t : src) {
    out << " " << t.get<std::string>();
    width = std::max(width, data::decode_utf8(t.get<std::string>()).size());
  }
  out << "\ntranslation: " << e.at("translation").get<std::string>() << "\n";
  if (e.contains("self_attention"))  // a model of many maps (the Transformer): which one the steps show
    out << "attention map: " << e.at("attention_map").get<std::string>() << " (encoder self-attention: "
        << e.at("self_attention").at("map").get<std::string>() << ", in --format json and --self-heatmap)\n";
  out << "\n";
  for (const json& s : e.at("steps")) step_table(out, s, src, width);
  return out.str();
}

}  // namespace attn::decode
