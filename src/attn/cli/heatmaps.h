// `attn translate --heatmaps DIR`: a translation's attention as a heatmap file.
#pragma once
#include <string>

#include "attn/decode/translator.h"
#include "attn/viz/heatmap.h"

namespace attn::cli {

// The best hypothesis of `t` as a heatmap: rows its target pieces (+ "</s>"
// when it finished), columns the source pieces. False (nothing to draw) for an
// empty input line or a translation without attention.
bool translation_heatmap(const decode::Translation& t, viz::Heatmap& out);

// DIR/0001.png for input line 1 (1-based, zero-padded to 4 digits); `format` is png|svg|pdf|html.
std::string heatmap_path(const std::string& dir, size_t line, const std::string& format);

}  // namespace attn::cli
