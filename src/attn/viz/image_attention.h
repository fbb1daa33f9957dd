// Attention over an image, drawn as in Xu et al. (2015), "Show, Attend and
// Tell", Figures 2-3: for every generated word, the decoder's weights over the
// encoder's Gh x Gw grid of cells are upsampled to the image's size and
// blended over it; a strip shows the image, then one panel per word with the
// word under it.
//
// Grid geometry (as nn/cnn_encoder.h numbers cells): cell g = row * Gw + col
// covers x in [col * W / Gw, (col + 1) * W / Gw) and y in [row * H / Gh,
// (row + 1) * H / Gh) of a W x H image, whatever size the model saw it at.
//
// Each word's upsampled map is scaled so that its largest value is 1 (the figure shows
// where a word looks, not how peaked its distribution is; a uniform row is
// uniformly bright). Soft attention reads best upsampled bilinearly (smooth,
// like the paper's figures); hard attention's one-hot rows read best as
// blocks (Upsample::Nearest shows exactly the chosen cell).
#pragma once
#include <string>
#include <vector>

#include "attn/viz/colormap.h"
#include "attn/viz/heatmap.h"

namespace attn::viz {

struct ImageAttention {
  int width = 0, height = 0;        // W, H: the picture's size, pixels
  std::vector<float> rgb;           // [H, W, 3] row-major, channel fastest, in [0, 1]
  int grid_h = 0, grid_w = 0;       // Gh, Gw: the attention grid
  std::vector<float> weights;       // [T, Gh * Gw] row-major: word t's weights over the cells, each row
                                    // a distribution (sums to 1 within 1e-3; one-hot for hard attention)
  std::vector<std::string> words;   // [T] UTF-8, the generated words
  std::string title;                // drawn above the strip when not empty (e.g. the caption)
};

enum class Upsample { Bilinear, Nearest };
enum class Blend {
  Mask,      // Xu et al.'s look: attended pixels brightened towards white, the rest darkened
  Colormap,  // the map in a colour map (viridis by default), half over the image
};

struct OverlayStyle {
  Upsample upsample = Upsample::Bilinear;
  Blend blend = Blend::Mask;
  ColorMap colors = ColorMap::Viridis;  // Blend::Colormap only
  double panel = 160;                   // side of the square each picture is fitted into, pixels (32..2048)
  double font_size = 14;                // word labels, pixels (6..72)
};

// Throws std::invalid_argument naming the field: empty or mis-sized picture,
// grid not positive or larger than the picture, weights not [T, Gh * Gw], a
// weight negative or not finite, a row not summing to 1, words not [T] (T >= 1)
// or not UTF-8, a style out of range.
void check_image_attention(const ImageAttention& a, const OverlayStyle& style = {});

// Word t's weights as a [H, W] map (row-major) at the picture's size, scaled so
// its maximum is 1 (a row of zeros stays zero). Bilinear: cell values at cell centres, interpolated with
// pixel centres at half-integers and clamped at the border (PyTorch's
// interpolate with align_corners=False); Nearest: each pixel takes its cell's value.
std::vector<float> upsample_weights(const ImageAttention& a, int t, Upsample mode);

// [H, W, 3]: the picture with `map` ([H, W], values in [0, 1]) blended over it.
std::vector<float> blend_attention(const ImageAttention& a, const std::vector<float>& map, const OverlayStyle& style);

// Where a strip's pieces go: panel 0 is the picture, panel t + 1 word t's overlay.
struct StripLayout {
  double width = 0, height = 0;  // the whole figure, pixels
  std::vector<Box> panels;       // [T + 1] each picture's box (fitted into style.panel, aspect kept)
  double label_y = 0;            // top of the word labels (centred under their panels)
  double title_y = 0;            // top of the title line
};

// Checks `a` (check_image_attention) and lays out its strip: panels left to
// right, style.panel apart plus a gap, so width = 2 * margin + (T + 1) * panel + T * gap.
StripLayout layout_strip(const ImageAttention& a, const OverlayStyle& style = {});

// The strip (image, then one overlay per word with the word under it) to
// `path`, .png or .pdf by its extension, replaced atomically.
void write_attention_strip(const std::string& path, const ImageAttention& a, const OverlayStyle& style = {});

// Word t's overlay alone, its word under it, to `path` (.png or .pdf), replaced
// atomically. Throws std::invalid_argument when t is not in [0, T).
void write_word_overlay(const std::string& path, const ImageAttention& a, int t, const OverlayStyle& style = {});

// The files of one caption in `dir` (created when missing): DIR/NAME.strip.png
// (write_attention_strip) and DIR/NAME.01.png, DIR/NAME.02.png, ... (word t's
// write_word_overlay, numbered from 1, at least two digits). Returns their
// paths, the strip first.
std::vector<std::string> write_attention_files(const std::string& dir, const std::string& name, const ImageAttention& a,
                                               const OverlayStyle& style = {});

}  // namespace attn::viz
