// Line-plot panels for the training curves: axes with round ticks, a series as
// a line (optionally with markers), a title, a note. Internal to viz/.
#pragma once
#include <cairo.h>

#include <string>
#include <utility>
#include <vector>

#include "attn/viz/colormap.h"
#include "attn/viz/heatmap.h"

namespace attn::viz {

struct Axis {
  double lo = 0, hi = 1;        // the drawn range (the outer ticks)
  std::vector<double> ticks;    // round values from lo to hi
};

// An axis over [lo, hi] with about `target` ticks at 1, 2 or 5 x 10^k steps;
// a single value gets a range around it.
Axis nice_axis(double lo, double hi, int target = 5);

// "1200", "0.25"
std::string tick_text(double v);

struct Panel {
  std::string title;                              // above the plot, left
  std::string empty_note;                         // shown when points is empty
  std::vector<std::pair<double, double>> points;  // (x, y), in order
  Rgb color;
  bool markers = false;                           // a dot on every point (few, sparse points)
};

// Draws `p` with its plot area `area` (ticks and their labels outside it).
void draw_panel(cairo_t* cr, const Box& area, const Axis& x, const Panel& p);

}  // namespace attn::viz
