// viz/: attention heatmaps (PNG decoded with libpng and read at every cell's
// centre, SVG, PDF, self-contained HTML, every input error) and training curves
// (a real log.jsonl fixture, missing series, malformed lines).
#include <gtest/gtest.h>
#include <png.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <regex>

#include "attn/viz/curves.h"
#include "attn/viz/heatmap.h"
#include "attn/viz/plot.h"
#include "attn/data/line_reader.h"
#include "train_test_util.h"

namespace attn::testing::viz_test {
namespace {

using viz::ColorMap;
using viz::Rgb;

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3]
  Rgb at(double x, double y) const {
    const size_t i = (size_t(y) * size_t(width) + size_t(x)) * 3;
    return {rgb[i], rgb[i + 1], rgb[i + 2]};
  }
};

// The PNG at `path`, decoded by libpng (not by cairo, which wrote it).
Image read_png(const std::string& path) {
  const std::string bytes = read_bytes(path);
  png_image img{};
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, bytes.data(), bytes.size()))
    throw std::runtime_error(path + ": not a PNG: " + img.message);
  img.format = PNG_FORMAT_RGB;
  Image out;
  out.width = int(img.width);
  out.height = int(img.height);
  out.rgb.resize(PNG_IMAGE_SIZE(img));
  if (!png_image_finish_read(&img, nullptr, out.rgb.data(), 0, nullptr))
    throw std::runtime_error(path + ": cannot decode: " + img.message);
  return out;
}

// 3 target rows x 4 source columns with known weights, labels in several scripts
// and one that must be escaped.
viz::Heatmap small_heatmap() {
  viz::Heatmap h;
  h.rows = 3;
  h.cols = 4;
  h.weights = {0.0f, 0.25f, 1.0f, 0.5f,  //
               0.75f, 0.1f, 0.9f, 0.0f,  //
               1.0f, 0.0f, 0.0f, 0.33f};
  h.src_labels = {"\u2581l'accord", "<b>&\"", "\u2581\u0153uvre", "</s>"};
  h.tgt_labels = {"\u2581économique", "\u2581août", "</s>"};
  h.title = "a title";
  return h;
}

std::string count_files_note(const std::string& dir) {
  std::string names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names += e.path().filename().string() + " ";
  return names;
}

TEST(VizColorMap, GreyAndViridisEnds) {
  EXPECT_EQ(viz::color_of(ColorMap::Grey, 0), (Rgb{0, 0, 0}));
  EXPECT_EQ(viz::color_of(ColorMap::Grey, 1), (Rgb{255, 255, 255}));
  EXPECT_EQ(viz::color_of(ColorMap::Grey, 0.25), (Rgb{64, 64, 64}));
  EXPECT_EQ(viz::color_of(ColorMap::Grey, 7), (Rgb{255, 255, 255}));  // clamped
  EXPECT_EQ(viz::color_of(ColorMap::Viridis, 0), (Rgb{0x44, 0x01, 0x54}));
  EXPECT_EQ(viz::color_of(ColorMap::Viridis, 1), (Rgb{0xfd, 0xe7, 0x25}));
  EXPECT_EQ(viz::color_of(ColorMap::Viridis, 0.5), (Rgb{0x21, 0x91, 0x8c}));
  // halfway between two samples: their mean
  EXPECT_EQ(viz::color_of(ColorMap::Viridis, 0.95), (Rgb{0xdd, 0xe3, 0x26}));
  EXPECT_EQ(viz::parse_color_map("viridis", "x"), ColorMap::Viridis);
  EXPECT_THROW(viz::parse_color_map("jet", "--heatmap-colors"), std::invalid_argument);
}

// Every cell's centre pixel has its weight's colour, in both maps; the figure
// is as large as its layout, has labels, and nothing touches its edges.
TEST(VizHeatmap, PngCellCentresHaveTheMapColour) {
  TempDir dir("viz_png");
  const viz::Heatmap h = small_heatmap();
  for (ColorMap map : {ColorMap::Grey, ColorMap::Viridis}) {
    viz::HeatmapStyle style;
    style.colors = map;
    const std::string path = dir.path + "/h.png";
    viz::write_heatmap(path, h, style);
    const viz::HeatmapLayout L = viz::layout_heatmap(h, style);
    const Image img = read_png(path);
    ASSERT_EQ(img.width, int(std::ceil(L.width)));
    ASSERT_EQ(img.height, int(std::ceil(L.height)));
    EXPECT_EQ(L.cell, 30);
    for (int64_t r = 0; r < h.rows; ++r)
      for (int64_t c = 0; c < h.cols; ++c) {
        const viz::Box b = L.cell_box(r, c);
        EXPECT_EQ(b.w, b.h) << "square cells";
        const Rgb want = viz::color_of(map, h.weights[size_t(r * h.cols + c)]);
        const Rgb got = img.at(b.x + b.w / 2, b.y + b.h / 2);
        EXPECT_EQ(got, want) << "cell " << r << "," << c << ": got " << viz::hex(got) << " want " << viz::hex(want);
      }
    // ink above the grid (source labels) and left of it (target labels)
    int ink_above = 0, ink_left = 0, ink_edge = 0;
    for (int y = 0; y < img.height; ++y)
      for (int x = 0; x < img.width; ++x) {
        const Rgb p = img.at(x, y);
        const bool ink = p.r < 128 && p.g < 128 && p.b < 128;
        if (ink && y < L.grid.y - 2 && x >= L.grid.x && x < L.grid.x + L.grid.w) ++ink_above;
        if (ink && x < L.grid.x - 2 && y >= L.grid.y && y < L.grid.y + L.grid.h) ++ink_left;
        if (!(p == Rgb{255, 255, 255}) && (x < 3 || y < 3 || x >= img.width - 3 || y >= img.height - 3)) ++ink_edge;
      }
    EXPECT_GT(ink_above, 200);
    EXPECT_GT(ink_left, 200);
    EXPECT_EQ(ink_edge, 0) << "something reaches the figure's edge (clipped)";
  }
  EXPECT_EQ(count_files_note(dir.path), "h.png ") << "no temporary file left behind";
}

// A long source label widens the band above the grid; the colour bar can be left out.
TEST(VizHeatmap, LayoutMakesRoomForLabels) {
  viz::Heatmap h = small_heatmap();
  const viz::HeatmapLayout short_labels = viz::layout_heatmap(h);
  h.src_labels[0] = "\u2581an-extraordinarily-long-source-piece";
  const viz::HeatmapLayout long_labels = viz::layout_heatmap(h);
  EXPECT_GT(long_labels.grid.y, short_labels.grid.y + 100);
  viz::HeatmapStyle s;
  s.colorbar = false;
  EXPECT_EQ(viz::layout_heatmap(h, s).colorbar.w, 0);
  EXPECT_LT(viz::layout_heatmap(h, s).width, long_labels.width);
  s.label_angle = 60;  // slanted labels run right: the figure grows past the grid for them
  const viz::HeatmapLayout slanted = viz::layout_heatmap(h, s);
  EXPECT_GT(slanted.width, slanted.grid.x + slanted.grid.w + 100);
}

TEST(VizHeatmap, SvgHasOneCellPerWeightAndEscapedLabels) {
  TempDir dir("viz_svg");
  const viz::Heatmap h = small_heatmap();
  viz::HeatmapStyle style;
  style.colors = ColorMap::Viridis;
  viz::write_heatmap(dir.path + "/h.SVG", h, style);  // extensions are case-insensitive
  const std::string svg = read_bytes(dir.path + "/h.SVG");
  ASSERT_EQ(svg.rfind("<svg ", 0), 0u);
  const std::regex cell_re("<rect class=\"cell\"[^>]*fill=\"(#[0-9a-f]{6})\" data-r=\"(\\d+)\" data-c=\"(\\d+)\"");
  int cells = 0;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), cell_re); it != std::sregex_iterator(); ++it, ++cells) {
    const int r = std::stoi((*it)[2]), c = std::stoi((*it)[3]);
    EXPECT_EQ((*it)[1].str(), viz::hex(viz::color_of(ColorMap::Viridis, h.weights[size_t(r * h.cols + c)])));
  }
  EXPECT_EQ(cells, h.rows * h.cols);
  EXPECT_NE(svg.find(">&lt;b&gt;&amp;&quot;</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<b>&\""), std::string::npos) << "a label went out unescaped";
  EXPECT_NE(svg.find(">\u2581\u0153uvre</text>"), std::string::npos);
  EXPECT_NE(svg.find(">\u2581août</text>"), std::string::npos);
  EXPECT_NE(svg.find(">a title</text>"), std::string::npos);
}

TEST(VizHeatmap, PdfIsAPdf) {
  TempDir dir("viz_pdf");
  viz::write_heatmap(dir.path + "/h.pdf", small_heatmap());
  const std::string pdf = read_bytes(dir.path + "/h.pdf");
  EXPECT_EQ(pdf.rfind("%PDF-", 0), 0u);
  EXPECT_NE(pdf.find("%%EOF"), std::string::npos);
  EXPECT_GT(pdf.size(), 2000u);
}

// Every weight is on the page, every label escaped, and nothing is fetched.
TEST(VizHeatmap, HtmlIsSelfContainedWithEveryWeight) {
  TempDir dir("viz_html");
  const viz::Heatmap h = small_heatmap();
  viz::write_heatmap(dir.path + "/h.html", h);
  const std::string html = read_bytes(dir.path + "/h.html");
  ASSERT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  for (int64_t r = 0; r < h.rows; ++r)
    for (int64_t c = 0; c < h.cols; ++c) {
      const std::string cell = "data-r=\"" + std::to_string(r) + "\" data-c=\"" + std::to_string(c) + "\" data-w=\"" +
                               viz::format_weight(h.weights[size_t(r * h.cols + c)]) + "\"";
      EXPECT_NE(html.find(cell), std::string::npos) << cell;
    }
  EXPECT_NE(html.find("data-w=\"0.2500\""), std::string::npos);
  EXPECT_NE(html.find("data-w=\"0.3300\""), std::string::npos);
  EXPECT_NE(html.find("&lt;b&gt;&amp;&quot;"), std::string::npos);
  EXPECT_EQ(html.find("<b>&\""), std::string::npos) << "a label went out unescaped";
  EXPECT_NE(html.find("<script>"), std::string::npos);
  EXPECT_NE(html.find("mousemove"), std::string::npos);
  for (const char* remote : {"src=", "href=", "@import", "url(http", "fetch("})
    EXPECT_EQ(html.find(remote), std::string::npos) << remote;
}

void expect_rejected(const viz::Heatmap& h, const std::string& path, const std::string& message,
                     const viz::HeatmapStyle& style = {}) {
  try {
    viz::write_heatmap(path, h, style);
    ADD_FAILURE() << "accepted: " << message;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(path)) << path;
}

TEST(VizHeatmap, BadInputIsNamed) {
  TempDir dir("viz_errors");
  const std::string png = dir.path + "/h.png";
  expect_rejected(small_heatmap(), dir.path + "/h.jpg", "unknown figure format '.jpg'");
  expect_rejected(small_heatmap(), dir.path + "/h", "unknown figure format ''");
  viz::Heatmap h = small_heatmap();
  h.src_labels.pop_back();
  expect_rejected(h, png, "3 source labels for 4 columns");
  h = small_heatmap();
  h.tgt_labels.push_back("x");
  expect_rejected(h, png, "4 target labels for 3 rows");
  h = small_heatmap();
  h.weights[6] = std::numeric_limits<float>::quiet_NaN();
  expect_rejected(h, png, "weight at row 1, column 2 is not finite");
  h.weights[6] = std::numeric_limits<float>::infinity();
  expect_rejected(h, png, "weight at row 1, column 2 is not finite");
  h = small_heatmap();
  h.weights.pop_back();
  expect_rejected(h, png, "11 weights for a 3 x 4 matrix");
  expect_rejected(viz::Heatmap{}, png, "empty matrix (0 x 0)");
  h = small_heatmap();
  h.tgt_labels[1] = "bad \xff";
  expect_rejected(h, png, "target label 1: not valid UTF-8");
  viz::HeatmapStyle s;
  s.label_angle = 20;
  expect_rejected(small_heatmap(), png, "label_angle", s);
  EXPECT_THROW(viz::write_heatmap(dir.path + "/no/such/dir/h.png", small_heatmap()), std::runtime_error);
}

const std::string kQuickstartLog = std::string(ATTN_TEST_DIR) + "/data/viz/quickstart-log.jsonl";
const std::string kNoBleuLog = std::string(ATTN_TEST_DIR) + "/data/viz/no-bleu-log.jsonl";

TEST(VizCurves, ReadsEveryRecordOfARealLog) {
  const viz::TrainingCurves c = viz::read_training_log(kQuickstartLog);
  ASSERT_EQ(c.loss.size(), 37u);
  EXPECT_EQ(c.loss[0].step, 50);
  EXPECT_DOUBLE_EQ(c.loss[0].value, 5.80091063509358);
  EXPECT_DOUBLE_EQ(c.loss[0].time_s, 25.277611250000003);
  ASSERT_EQ(c.perplexity.size(), 3u);
  ASSERT_EQ(c.bleu.size(), 3u);
  EXPECT_EQ(c.bleu[2].step, 1889);
  EXPECT_DOUBLE_EQ(c.bleu[2].value, 30.426587055663248);
  EXPECT_DOUBLE_EQ(c.perplexity[1].value, 5.063457585461881);
  EXPECT_DOUBLE_EQ(c.perplexity[1].time_s, 727.6709613279993);

  const viz::TrainingCurves nb = viz::read_training_log(kNoBleuLog);
  EXPECT_EQ(nb.loss.size(), 3u);
  EXPECT_EQ(nb.perplexity.size(), 2u);
  EXPECT_TRUE(nb.bleu.empty());
}

// The count of pixels of exactly `c`.
int pixels_of(const Image& img, Rgb c) {
  int n = 0;
  for (int y = 0; y < img.height; ++y)
    for (int x = 0; x < img.width; ++x) n += img.at(x, y) == c;
  return n;
}

// Each series is drawn in its own colour; a missing one is not drawn at all.
TEST(VizCurves, DrawsThePanelsThatHaveData) {
  TempDir dir("viz_curves");
  const Rgb loss{0x1f, 0x77, 0xb4}, ppl{0xd6, 0x5f, 0x0e}, bleu{0x2c, 0xa0, 0x2c};
  viz::write_curves(dir.path + "/all.png", viz::read_training_log(kQuickstartLog), viz::CurveAxis::Step, "run");
  const Image all = read_png(dir.path + "/all.png");
  EXPECT_EQ(all.width, 820);
  EXPECT_GT(pixels_of(all, loss), 300);
  EXPECT_GT(pixels_of(all, ppl), 100);
  EXPECT_GT(pixels_of(all, bleu), 100);
  viz::write_curves(dir.path + "/nb.png", viz::read_training_log(kNoBleuLog), viz::CurveAxis::Time);
  const Image nb = read_png(dir.path + "/nb.png");
  EXPECT_GT(pixels_of(nb, loss), 100);
  EXPECT_GT(pixels_of(nb, ppl), 50);
  EXPECT_EQ(pixels_of(nb, bleu), 0);
  viz::write_curves(dir.path + "/all.svg", viz::read_training_log(kQuickstartLog), viz::CurveAxis::Time);
  EXPECT_EQ(read_bytes(dir.path + "/all.svg").rfind("<?xml", 0), 0u);
  viz::write_curves(dir.path + "/all.pdf", viz::read_training_log(kQuickstartLog), viz::CurveAxis::Step);
  EXPECT_EQ(read_bytes(dir.path + "/all.pdf").rfind("%PDF-", 0), 0u);
  EXPECT_THROW(viz::write_curves(dir.path + "/all.html", {}, viz::CurveAxis::Step), std::invalid_argument);
}

TEST(VizCurves, MalformedLinesAreNamedByFileAndLine) {
  TempDir dir("viz_curves_bad");
  const std::string good = R"({"type":"train","step":1,"loss":2.0,"elapsed_s":1.0})";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"type\":\"train\",", "not JSON"},
      {"[1, 2]", "not a JSON object"},
      {R"({"step":3})", "no \"type\" string"},
      {R"({"type":"train","step":3,"elapsed_s":1})", "train record without a numeric \"loss\""},
      {R"({"type":"train","step":"3","loss":1,"elapsed_s":1})", "train record without a numeric \"step\""},
      {R"({"type":"valid","step":3,"elapsed_s":1,"bleu":"high"})", "\"bleu\" is not a number"},
      {R"({"type":"valid","step":3,"perplexity":2})", "valid record without a numeric \"elapsed_s\""}};
  for (const auto& [line, message] : cases) {
    const std::string path = dir.path + "/log.jsonl";
    data::write_lines(path, {good, "", line, good});
    try {
      viz::read_training_log(path);
      ADD_FAILURE() << "accepted: " << line;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":3: " + message), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(viz::read_training_log(dir.path + "/missing.jsonl"), std::runtime_error);
}

TEST(VizCurves, NiceAxesCoverTheirRange) {
  const viz::Axis a = viz::nice_axis(0, 1889, 8);
  EXPECT_EQ(a.lo, 0);
  EXPECT_EQ(a.hi, 2000);
  EXPECT_EQ(a.ticks.size(), 11u);  // steps of 200
  const viz::Axis b = viz::nice_axis(4.87, 6.47);
  EXPECT_LE(b.lo, 4.87);
  EXPECT_GE(b.hi, 6.47);
  EXPECT_NEAR(b.ticks[1] - b.ticks[0], 0.2, 1e-12);
  const viz::Axis one = viz::nice_axis(3, 3);
  EXPECT_LT(one.lo, 3);
  EXPECT_GT(one.hi, 3);
  EXPECT_EQ(viz::tick_text(1200), "1200");
  EXPECT_EQ(viz::tick_text(0.25), "0.25");
}

}  // namespace
}  // namespace attn::testing::viz_test
