// Attention heatmaps: a target x source weight matrix drawn as in Figure 3 of
// Bahdanau et al. (2015): source tokens along the top (rotated), target tokens
// down the left side, one square cell per weight (grey: 0 black, 1 white), a
// colour bar with ticks and an optional title.
//
// Labels are drawn as given: SentencePiece's word marker "▁" (U+2581) stays
// visible, so the figure shows the pieces the model read and where words begin.
//
// Formats, by the file's extension:
//   .png   raster (1 layout unit = 1 pixel), through cairo
//   .pdf   vector, through cairo (text as fonts)
//   .svg   hand-written SVG: one <rect class="cell"> per weight with a <title>
//          tooltip, labels as <text> (selectable; the viewer's fonts draw them)
//   .html  a self-contained page (inline CSS and JS, no network) with that SVG
//          and the source token, target token and weight of the cell under the pointer
// Every label is XML-escaped in .svg and .html.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/viz/colormap.h"

namespace attn::viz {

struct Heatmap {
  std::vector<float> weights;               // [rows = target tokens, cols = source tokens] row-major, each in [0, 1]
  int64_t rows = 0, cols = 0;
  std::vector<std::string> src_labels;      // [cols], UTF-8
  std::vector<std::string> tgt_labels;      // [rows], UTF-8
  std::string title;                        // drawn above the figure when not empty
};

struct HeatmapStyle {
  ColorMap colors = ColorMap::Grey;
  double cell = 30;             // side of a cell (pixels in PNG, points in PDF/SVG)
  double font_size = 14;        // labels, pixels
  double label_angle = 90;      // source labels, degrees counter-clockwise from horizontal: 45..90
  bool colorbar = true;
};

struct Box {
  double x = 0, y = 0, w = 0, h = 0;  // top-left corner and size
};

// Where everything of a heatmap goes (the same for every format).
struct HeatmapLayout {
  double width = 0, height = 0;  // the whole figure
  Box grid;                      // the cells: row r, column c at grid.x + c * cell, grid.y + r * cell
  double cell = 0;
  Box colorbar;                  // w = 0 without a colour bar; value 1 at the top
  double title_y = 0;            // top of the title line, centred horizontally
  double label_pad = 0;          // gap between the grid and the labels

  Box cell_box(int64_t row, int64_t col) const { return {grid.x + col * cell, grid.y + row * cell, cell, cell}; }
};

// Checks `h` (throws std::invalid_argument naming the problem: empty matrix,
// weights not rows x cols, label counts, a non-finite weight, invalid UTF-8 in
// a label, a style out of range) and lays it out.
HeatmapLayout layout_heatmap(const Heatmap& h, const HeatmapStyle& style = {});

// Writes the heatmap to `path` in the format of its extension (.png, .svg, .pdf,
// .html), replacing the file atomically. Throws std::invalid_argument for bad
// input (see layout_heatmap) or an unknown extension, std::runtime_error when
// the file cannot be written.
void write_heatmap(const std::string& path, const Heatmap& h, const HeatmapStyle& style = {});

// "0.2500": how the SVG and HTML print a weight.
std::string format_weight(float w);

}  // namespace attn::viz
