#include "attn/eval/caption_metrics.h"

#include <algorithm>
#include <stdexcept>

namespace attn::eval {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& w) {
  return std::find(list.begin(), list.end(), w) != list.end();
}

std::string join(const std::vector<std::string>& words) {
  std::string s;
  for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
  return s;
}

void check_samples(const std::vector<CaptionSample>& samples, const char* metric) {
  if (samples.empty()) throw std::invalid_argument(std::string(metric) + ": no captions");
  for (size_t i = 0; i < samples.size(); ++i)
    if (samples[i].references.empty())
      throw std::invalid_argument(std::string(metric) + ": caption " + std::to_string(i) + " has no reference");
}

// The object an object phrase (shape at words[t], with the colour / size words
// in [first, t)) names: the single match, or -1 for none or several.
int phrase_object(const std::vector<std::string>& words, size_t first, size_t t,
                  const std::vector<data::CaptionObject>& objects, const ObjectLexicon& lexicon) {
  int found = -1;
  for (size_t o = 0; o < objects.size(); ++o) {
    bool match = objects[o].shape == words[t];
    for (size_t k = first; k < t && match; ++k)
      match = contains(lexicon.colours, words[k]) ? objects[o].colour == words[k] : objects[o].size == words[k];
    if (!match) continue;
    if (found >= 0) return -1;  // ambiguous
    found = int(o);
  }
  return found;
}

// cell g's rectangle [x0, y0, x1, y1) in pixels
std::array<double, 4> cell_rect(const GridGeometry& g, int cell) {
  const int row = cell / g.grid_w, col = cell % g.grid_w;
  const double cw = double(g.width) / g.grid_w, ch = double(g.height) / g.grid_h;
  return {col * cw, row * ch, (col + 1) * cw, (row + 1) * ch};
}

}  // namespace

std::vector<std::string> caption_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (!word.empty()) words.push_back(word);
      word.clear();
    } else if (std::string_view(".,:;!?\"").find(c) == std::string_view::npos) {
      word += (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
    }
  }
  if (!word.empty()) words.push_back(word);
  return words;
}

bool exact_match(const std::vector<std::string>& words, const std::vector<std::vector<std::string>>& references) {
  return std::find(references.begin(), references.end(), words) != references.end();
}

double exact_match_accuracy(const std::vector<CaptionSample>& samples) {
  check_samples(samples, "exact match");
  size_t hits = 0;
  for (const CaptionSample& s : samples) hits += exact_match(s.words, s.references) ? 1 : 0;
  return double(hits) / double(samples.size());
}

BleuScore caption_bleu(const std::vector<CaptionSample>& samples, const BleuOptions& options) {
  check_samples(samples, "caption BLEU");
  size_t streams = 0;
  for (const CaptionSample& s : samples) streams = std::max(streams, s.references.size());
  std::vector<std::string> hyps;
  std::vector<std::vector<std::string>> refs(streams, std::vector<std::string>(samples.size()));  // "" = no k-th ref
  for (size_t i = 0; i < samples.size(); ++i) {
    hyps.push_back(join(samples[i].words));
    for (size_t k = 0; k < samples[i].references.size(); ++k) refs[k][i] = join(samples[i].references[k]);
  }
  return corpus_bleu(hyps, refs, options);
}

std::vector<int> object_refs(const std::vector<std::string>& words, const std::vector<data::CaptionObject>& objects,
                             const ObjectLexicon& lexicon, int64_t* unmatched) {
  std::vector<int> refs(words.size(), -1);
  for (size_t t = 0; t < words.size(); ++t) {
    if (!contains(lexicon.shapes, words[t])) continue;
    // the attribute words right before the shape: at most one colour and one size
    size_t first = t;
    bool colour = false, size = false;
    while (first > 0) {
      const std::string& w = words[first - 1];
      if (!colour && contains(lexicon.colours, w)) colour = true;
      else if (!size && contains(lexicon.sizes, w)) size = true;
      else break;
      --first;
    }
    const int o = phrase_object(words, first, t, objects, lexicon);
    for (size_t k = first; k <= t; ++k) refs[k] = o;
    if (o < 0 && unmatched) *unmatched += int64_t(t - first + 1);
  }
  return refs;
}

double cell_box_overlap(const GridGeometry& grid, int cell, const std::array<int, 4>& box) {
  if (grid.width < 1 || grid.height < 1 || grid.grid_h < 1 || grid.grid_w < 1)
    throw std::invalid_argument("localisation: image " + std::to_string(grid.width) + "x" + std::to_string(grid.height) +
                                " and grid " + std::to_string(grid.grid_h) + "x" + std::to_string(grid.grid_w) +
                                " must be positive");
  if (cell < 0 || cell >= grid.grid_h * grid.grid_w)
    throw std::invalid_argument("localisation: cell " + std::to_string(cell) + " outside the " +
                                std::to_string(grid.grid_h) + "x" + std::to_string(grid.grid_w) + " grid");
  const std::array<double, 4> c = cell_rect(grid, cell);
  const double iw = std::min(c[2], double(box[2])) - std::max(c[0], double(box[0]));
  const double ih = std::min(c[3], double(box[3])) - std::max(c[1], double(box[1]));
  const double box_area = double(box[2] - box[0]) * double(box[3] - box[1]);
  if (iw <= 0 || ih <= 0 || box_area <= 0) return 0.0;
  const double cell_area = (c[2] - c[0]) * (c[3] - c[1]);
  return iw * ih / std::min(cell_area, box_area);
}

Localisation& Localisation::operator+=(const Localisation& o) {
  named += o.named;
  localised += o.localised;
  unmatched += o.unmatched;
  return *this;
}

Localisation localise(const std::vector<std::string>& words, const std::vector<float>& attention,
                      const std::vector<data::CaptionObject>& objects, const GridGeometry& grid,
                      const ObjectLexicon& lexicon, const LocalisationOptions& options) {
  const size_t cells = size_t(std::max(0, grid.grid_h * grid.grid_w));
  if (cells == 0 || attention.size() != words.size() * cells)
    throw std::invalid_argument("localisation: attention holds " + std::to_string(attention.size()) +
                                " weights, expected [T = " + std::to_string(words.size()) +
                                ", Gh * Gw = " + std::to_string(cells) + "]");
  Localisation result;
  const std::vector<int> refs = object_refs(words, objects, lexicon, &result.unmatched);
  for (size_t t = 0; t < words.size(); ++t) {
    if (refs[t] < 0 || (options.shape_words_only && !contains(lexicon.shapes, words[t]))) continue;
    const float* row = attention.data() + t * cells;
    const int argmax = int(std::max_element(row, row + cells) - row);  // first of equal maxima
    ++result.named;
    if (cell_box_overlap(grid, argmax, objects[size_t(refs[t])].box) >= options.min_overlap) ++result.localised;
  }
  return result;
}

std::vector<size_t> images_with_objects(const std::vector<data::CaptionImage>& images, size_t count) {
  std::vector<size_t> out;
  for (size_t i = 0; i < images.size(); ++i)
    if (images[i].objects.size() == count) out.push_back(i);
  return out;
}

}  // namespace attn::eval
