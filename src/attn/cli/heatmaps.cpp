#include "attn/cli/heatmaps.h"

#include <cstdio>

namespace attn::cli {

bool translation_heatmap(const decode::Translation& t, viz::Heatmap& out) {
  if (t.hypotheses.empty() || t.src_pieces.empty()) return false;
  const decode::TranslatedHypothesis& h = t.hypotheses[0];
  if (h.attention.empty()) return false;
  out = {};
  out.src_labels = t.src_pieces;
  out.tgt_labels = h.pieces;
  if (h.finished) out.tgt_labels.push_back("</s>");  // the step that chose EOS attended too
  out.cols = int64_t(out.src_labels.size());
  out.rows = int64_t(out.tgt_labels.size());
  out.weights = h.attention;
  return out.rows > 0;
}

std::string heatmap_path(const std::string& dir, size_t line, const std::string& format) {
  char name[32];
  std::snprintf(name, sizeof name, "%04zu.", line);
  return dir + "/" + name + format;
}

}  // namespace attn::cli
