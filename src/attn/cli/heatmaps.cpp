#include "attn/cli/heatmaps.h"

#include <cstdio>
#include <utility>

namespace attn::cli {

bool translation_heatmap(const decode::Translation& t, viz::Heatmap& out) {
  if (t.hypotheses.empty() || t.src_pieces.empty()) return false;
  const decode::TranslatedHypothesis& h = t.hypotheses[0];
  if (h.attention.empty()) return false;
  std::string title = std::move(out.title);
  out = {};
  out.title = std::move(title);
  out.src_labels = t.src_pieces;
  out.tgt_labels = h.pieces;
  if (h.finished) out.tgt_labels.push_back("</s>");  // the step that chose EOS attended too
  out.cols = int64_t(out.src_labels.size());
  out.rows = int64_t(out.tgt_labels.size());
  out.weights = h.attention;
  return out.rows > 0;
}

bool explanation_heatmap(const nlohmann::json& e, const std::string& title, viz::Heatmap& out) {
  const nlohmann::json& steps = e.at("steps");
  out = {};
  out.title = title;
  out.src_labels = e.at("src_tokens").get<std::vector<std::string>>();
  for (const nlohmann::json& s : steps) {
    const std::string chosen = s.at("chosen").get<std::string>();
    out.tgt_labels.push_back(chosen);
    const std::vector<float> w = s.at("weights").get<std::vector<float>>();
    out.weights.insert(out.weights.end(), w.begin(), w.end());
  }
  out.cols = int64_t(out.src_labels.size());
  out.rows = int64_t(out.tgt_labels.size());
  return out.rows > 0 && out.cols > 0;
}

bool self_attention_heatmap(const nlohmann::json& e, const std::string& title, viz::Heatmap& out) {
  if (!e.contains("self_attention")) return false;
  out = {};
  out.title = title;
  out.src_labels = out.tgt_labels = e.at("src_tokens").get<std::vector<std::string>>();
  for (const nlohmann::json& row : e.at("self_attention").at("weights")) {
    const std::vector<float> w = row.get<std::vector<float>>();
    out.weights.insert(out.weights.end(), w.begin(), w.end());
  }
  out.rows = out.cols = int64_t(out.src_labels.size());
  return out.rows > 0;
}

std::string numbered_path(const std::string& file, size_t line, size_t lines) {
  if (lines <= 1) return file;
  const size_t slash = file.find_last_of('/'), dot = file.find_last_of('.');
  const size_t cut = dot == std::string::npos || (slash != std::string::npos && dot < slash) ? file.size() : dot;
  char num[32];
  std::snprintf(num, sizeof num, "-%04zu", line);
  return file.substr(0, cut) + num + file.substr(cut);
}

std::string heatmap_path(const std::string& dir, size_t line, const std::string& format) {
  char name[32];
  std::snprintf(name, sizeof name, "%04zu.", line);
  return dir + "/" + name + format;
}

}  // namespace attn::cli
