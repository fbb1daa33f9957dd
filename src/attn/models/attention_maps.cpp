// Attention maps by name (attention_maps.h).
#include "attn/models/attention_maps.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace attn::models {
namespace {

// The digits of s from `pos` to the end as a positive number; 0 when s has none there or anything else.
int64_t positive_tail(const std::string& s, size_t pos) {
  if (pos >= s.size() || s.size() - pos > 9) return 0;
  int64_t v = 0;
  for (size_t i = pos; i < s.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return 0;
    v = v * 10 + (s[i] - '0');
  }
  return v;
}

std::string list(const std::vector<std::string>& maps) {
  std::string known;
  for (const std::string& m : maps) known += (known.empty() ? "" : ", ") + m;
  return maps.empty() ? std::string("none") : known;
}

std::string family_words(const std::string& family) {
  if (family == kCrossFamily) return "cross-attention";
  if (family == kSelfFamily) return "encoder self-attention";
  return family;
}

// --head's value: 0 for "mean", else the head, 1-based; throws when it is neither a number nor "mean".
int64_t parse_head(const std::string& head, const std::string& flag) {
  if (head == "mean") return 0;
  const int64_t h = positive_tail(head, 0);
  if (h < 1) throw std::invalid_argument(flag + "head \"" + head + "\": expects a head number (1, 2, ...) or mean");
  return h;
}

}  // namespace

std::string layered_map_name(const std::string& family, int64_t layer, int64_t head) {
  return family + ".layer" + std::to_string(layer) + (head > 0 ? ".head" + std::to_string(head) : std::string(".mean"));
}

std::optional<LayeredMap> parse_layered_map(const std::string& name) {
  const size_t at = name.find(".layer");
  if (at == std::string::npos || at == 0) return std::nullopt;
  const size_t dot = name.find('.', at + 6);
  if (dot == std::string::npos) return std::nullopt;
  LayeredMap m;
  m.family = name.substr(0, at);
  m.layer = positive_tail(name.substr(0, dot), at + 6);
  const std::string tail = name.substr(dot + 1);
  if (tail != "mean") m.head = tail.rfind("head", 0) == 0 ? positive_tail(tail, 4) : 0;
  if (m.layer < 1 || (tail != "mean" && m.head < 1)) return std::nullopt;
  return m;
}

MapGrid map_grid(const std::vector<std::string>& maps) {
  MapGrid g;
  const std::optional<LayeredMap> first = maps.empty() ? std::nullopt : parse_layered_map(maps.front());
  if (!first) return g;
  g.family = first->family;
  for (const std::string& name : maps) {
    const std::optional<LayeredMap> m = parse_layered_map(name);
    if (!m || m->family != g.family) continue;
    g.layers = std::max(g.layers, m->layer);
    g.heads = std::max(g.heads, m->head);
  }
  return g;
}

std::string resolve_map(const std::vector<std::string>& maps, const std::string& name, const std::string& what) {
  if (name.empty()) return maps.empty() ? std::string() : maps.front();
  if (std::find(maps.begin(), maps.end(), name) != maps.end()) return name;
  throw std::invalid_argument("unknown " + what + " \"" + name + "\" (the model's maps: " + list(maps) + ")");
}

std::string choose_map(const std::vector<std::string>& maps, const MapChoice& c, const std::string& what,
                       const std::string& flag) {
  const bool by_position = c.layer != 0 || !c.head.empty();
  if (!by_position) return resolve_map(maps, c.name, what);
  if (!c.name.empty())
    throw std::invalid_argument(flag + "attention-map and " + flag + "layer / " + flag +
                                "head: give a map by name or by layer and head, not both");
  const MapGrid g = map_grid(maps);
  if (g.layers == 0)
    throw std::invalid_argument(flag + "layer / " + flag + "head: the model's " + what +
                                "s have no layers or heads (its maps: " + list(maps) + ")");
  const std::string ranges = "the model has layers 1-" + std::to_string(g.layers) + " and heads 1-" +
                             std::to_string(g.heads) + " or mean (" + family_words(g.family) + ")";
  const int64_t layer = c.layer == 0 ? g.layers : c.layer;
  if (layer < 1 || layer > g.layers)
    throw std::invalid_argument(flag + "layer " + std::to_string(c.layer) + ": outside the range; " + ranges);
  const int64_t head = c.head.empty() ? 0 : parse_head(c.head, flag);
  if (head > g.heads) throw std::invalid_argument(flag + "head " + c.head + ": outside the range; " + ranges);
  return resolve_map(maps, layered_map_name(g.family, layer, head), what);
}

std::string map_title(const std::vector<std::string>& maps, const std::string& name) {
  const std::optional<LayeredMap> m = parse_layered_map(name);
  if (!m) return name;
  const MapGrid g = map_grid(maps);
  std::string t = family_words(m->family) + ", layer " + std::to_string(m->layer);
  if (m->head > 0) return t + ", head " + std::to_string(m->head);
  const int64_t heads = g.family == m->family ? g.heads : 0;
  return t + (heads > 0 ? ", mean of " + std::to_string(heads) + " heads" : ", mean over the heads");
}

}  // namespace attn::models
