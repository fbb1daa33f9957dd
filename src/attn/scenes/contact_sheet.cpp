#include "attn/scenes/contact_sheet.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "attn/image/codec.h"
#include "attn/scenes/render.h"
#include "attn/viz/output.h"
#include "attn/viz/text.h"

namespace attn::scenes {
namespace {

constexpr double kPad = 10, kCaptionLines = 3;
const viz::Font kCaptionFont{"DejaVu Sans", 11, false};
const viz::Font kTitleFont{"DejaVu Sans", 14, true};

// `text` broken into lines no wider than `width` (greedy, at spaces); at most
// max_lines, the last one ending in "…" when words were left over.
std::vector<std::string> wrap(const std::string& text, double width, int max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string word, line;
  while (in >> word) {
    const std::string candidate = line.empty() ? word : line + " " + word;
    if (line.empty() || viz::measure_text(candidate, kCaptionFont).width <= width) {
      line = candidate;
      continue;
    }
    lines.push_back(line);
    line = word;
  }
  if (!line.empty()) lines.push_back(line);
  if (int(lines.size()) > max_lines) {
    lines.resize(size_t(max_lines));
    lines.back() += " …";
  }
  return lines;
}

std::string first_caption(const data::CaptionImage& img) {
  const data::Caption& c = img.captions.front();
  if (!c.raw.empty()) return c.raw;
  std::string s;
  for (const std::string& t : c.tokens) s += (s.empty() ? "" : " ") + t;
  return s;
}

void draw_boxes(cairo_t* cr, const data::CaptionImage& img, double x, double y, double scale) {
  for (size_t k = 0; k < img.objects.size(); ++k) {
    const auto& b = img.objects[k].box;
    const double bx = x + b[0] * scale, by = y + b[1] * scale, bw = (b[2] - b[0]) * scale, bh = (b[3] - b[1]) * scale;
    cairo_set_line_width(cr, 3);  // a dark rim under a white line: visible on any background
    cairo_set_source_rgb(cr, 0, 0, 0);
    cairo_rectangle(cr, bx + 0.5, by + 0.5, bw - 1, bh - 1);
    cairo_stroke(cr);
    cairo_set_line_width(cr, 1);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_rectangle(cr, bx + 0.5, by + 0.5, bw - 1, bh - 1);
    cairo_stroke(cr);
    viz::draw_text(cr, std::to_string(k), kCaptionFont, bx + 3, by + 2, viz::HAlign::Start, viz::VAlign::Top);
  }
}

void draw_cell(cairo_t* cr, const data::CaptionImage& entry, const image::Image& pixels, double x, double y,
               const SheetOptions& o) {
  const double scale = std::min(double(o.cell) / pixels.width, double(o.cell) / pixels.height);
  const double ix = x + (o.cell - pixels.width * scale) / 2, iy = y + (o.cell - pixels.height * scale) / 2;
  viz::draw_rgb(cr, pixels.rgb.data(), pixels.width, pixels.height, ix, iy, scale);
  if (o.boxes) draw_boxes(cr, entry, ix, iy, scale);
  cairo_set_source_rgb(cr, 0, 0, 0);
  const double line_h = viz::measure_text("Ag", kCaptionFont).height;
  const std::vector<std::string> lines = wrap(first_caption(entry), o.cell, int(kCaptionLines));
  for (size_t l = 0; l < lines.size(); ++l)
    viz::draw_text(cr, lines[l], kCaptionFont, x, y + o.cell + 4 + l * line_h, viz::HAlign::Start, viz::VAlign::Top);
}

}  // namespace

void write_contact_sheet(const data::CaptionCorpus& corpus, const std::string& path, const SheetOptions& o) {
  const viz::Format format = viz::format_of(path, {viz::Format::Png, viz::Format::Pdf});
  if (o.count < 1 || o.columns < 1 || o.cell < 16)
    throw std::invalid_argument("contact sheet: count and columns must be at least 1 and cell at least 16");
  std::vector<const data::CaptionImage*> chosen;
  for (const data::CaptionImage& img : corpus.images)
    if ((o.split.empty() || img.split == o.split) && int(chosen.size()) < o.count) chosen.push_back(&img);
  if (chosen.empty()) throw std::invalid_argument("contact sheet: no image" + (o.split.empty() ? "" : " in split " + o.split));
  std::vector<image::Image> pixels;
  for (const data::CaptionImage* img : chosen) pixels.push_back(image::read_image(img->path));
  const int cols = std::min(o.columns, int(chosen.size())), rows = (int(chosen.size()) + cols - 1) / cols;
  const double line_h = viz::measure_text("Ag", kCaptionFont).height;
  const double cell_w = o.cell + kPad, cell_h = o.cell + 4 + kCaptionLines * line_h + kPad;
  const double title_h = o.title.empty() ? 0 : viz::measure_text(o.title, kTitleFont).height + kPad;
  const double width = std::ceil(kPad + cols * cell_w), height = std::ceil(kPad + title_h + rows * cell_h);
  const std::string bytes = viz::render_cairo(format, width, height, [&](cairo_t* cr) {
    if (!o.title.empty()) {
      cairo_set_source_rgb(cr, 0, 0, 0);
      viz::draw_text(cr, o.title, kTitleFont, kPad, kPad, viz::HAlign::Start, viz::VAlign::Top);
    }
    for (size_t k = 0; k < chosen.size(); ++k)
      draw_cell(cr, *chosen[k], pixels[k], kPad + double(k % size_t(cols)) * cell_w,
                kPad + title_h + double(k / size_t(cols)) * cell_h, o);
  });
  viz::write_replacing(path, bytes);
}

}  // namespace attn::scenes
