// `attn translate --heatmaps DIR`: a translation's attention as a heatmap file.
#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "attn/decode/translator.h"
#include "attn/viz/heatmap.h"

namespace attn::cli {

// The best hypothesis of `t` as a heatmap: rows its target pieces (+ "</s>"
// when it finished), columns the source pieces. False (nothing to draw) for an
// empty input line or a translation without attention.
// out.title is kept.
bool translation_heatmap(const decode::Translation& t, viz::Heatmap& out);

// An explanation (decode/explain.h's JSON) as a heatmap: one row per step
// (its "weights"), labelled by the token it chose ("</s>" for the EOS step),
// columns the source tokens (pieces, or words with --words), titled `title`.
// False when there is nothing to draw.
bool explanation_heatmap(const nlohmann::json& explanation, const std::string& title, viz::Heatmap& out);

// An explanation's encoder self-attention ("self_attention", a Transformer's)
// as a heatmap [S, S]: rows the source tokens attending, columns the source
// tokens attended to, titled `title`. False when the explanation has none.
bool self_attention_heatmap(const nlohmann::json& explanation, const std::string& title, viz::Heatmap& out);

// `attn explain --heatmap FILE` over several input lines: FILE for a single
// line, else line n's FILE with "-000n" before the extension (map.png -> map-0002.png).
std::string numbered_path(const std::string& file, size_t line, size_t lines);

// DIR/0001.png for input line 1 (1-based, zero-padded to 4 digits); `format` is png|svg|pdf|html.
std::string heatmap_path(const std::string& dir, size_t line, const std::string& format);

}  // namespace attn::cli
