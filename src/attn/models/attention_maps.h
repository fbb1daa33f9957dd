// Attention maps by name: the one place that knows how maps are named, looked
// up by name or by layer and head, and described in a figure's title.
//
// A model reports its maps as a list of names, its default first
// (Seq2SeqModel::attention_maps() for the decoder's maps over the source,
// encoder_attention_maps() for the encoder's self-attention). A model whose
// attention has layers and heads names them "<family>.layer<l>.head<h>" and
// "<family>.layer<l>.mean" (l, h 1-based; the Transformer: family "cross" for
// the decoder's cross-attention, "self" for the encoder's self-attention);
// --layer / --head and the web page's selectors read those names back.
//
// Internal header: not installed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace attn::models {

// The family of the encoder's self-attention maps, and of the decoder's cross-attention maps.
inline const std::string kSelfFamily = "self";
inline const std::string kCrossFamily = "cross";

// "<family>.layer<layer>.head<head>" for head >= 1, "<family>.layer<layer>.mean" for head 0.
std::string layered_map_name(const std::string& family, int64_t layer, int64_t head);

// A layered map's parts; head 0 is the mean over the heads.
struct LayeredMap {
  std::string family;
  int64_t layer = 0, head = 0;
};
// The parts of a name layered_map_name() makes; nullopt for any other name.
std::optional<LayeredMap> parse_layered_map(const std::string& name);

// The layers and heads among `maps` of the family of maps.front() (its
// default): both 0 when the default is not a layered map.
struct MapGrid {
  std::string family;
  int64_t layers = 0, heads = 0;
};
MapGrid map_grid(const std::vector<std::string>& maps);

// `name` if it is one of `maps`, the default maps.front() for "" ("" when
// there are none). Throws std::invalid_argument naming `name` and listing
// `maps`; `what` names the list ("attention map", "encoder attention map").
std::string resolve_map(const std::vector<std::string>& maps, const std::string& name, const std::string& what);

// What --attention-map, --layer and --head ask for: a name, or a layer and a head.
struct MapChoice {
  std::string name;   // a map by name ("": the default, unless layer or head is set)
  int64_t layer = 0;  // 1-based; 0: not given (the last layer when head is given)
  std::string head;   // "1", "2", ... or "mean"; "": not given (the mean when layer is given)
};
// The map `choice` names among `maps` (resolve_map for a name; for a layer
// and head the layered map of map_grid(maps)'s family). Throws
// std::invalid_argument for a name and a layer / head together, a layer or
// head outside the model's ranges (naming them), or a layer / head for maps
// without layers (naming the maps). `flag` prefixes the option names in
// messages ("--" or "--self-").
std::string choose_map(const std::vector<std::string>& maps, const MapChoice& choice, const std::string& what,
                       const std::string& flag = "--");

// A figure's title for `name` of `maps`: "cross-attention, layer 3, head 2",
// "cross-attention, layer 3, mean of 4 heads", "encoder self-attention, layer 1,
// head 1"; the name itself for a map without layers ("attention").
std::string map_title(const std::vector<std::string>& maps, const std::string& name);

}  // namespace attn::models
