// viz/image_attention.h: per-word attention over an image (Xu et al. 2015's
// figures). The PNGs are read back with image/codec.h (libpng) and measured.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "attn/image/codec.h"
#include "attn/viz/image_attention.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::TempDir;

using viz::ImageAttention;

// A flat grey W x H picture with a Gh x Gw grid and one word per row of `weights`.
ImageAttention grey_picture(int w, int h, int gh, int gw, std::vector<float> weights) {
  ImageAttention a;
  a.width = w;
  a.height = h;
  a.rgb.assign(size_t(w) * size_t(h) * 3, 0.5f);
  a.grid_h = gh;
  a.grid_w = gw;
  const size_t steps = weights.size() / size_t(gh * gw);
  a.weights = std::move(weights);
  for (size_t t = 0; t < steps; ++t) a.words.push_back("w" + std::to_string(t));
  return a;
}

std::vector<float> one_hot(int cells, int hot) {
  std::vector<float> w(size_t(cells), 0.0f);
  w[size_t(hot)] = 1.0f;
  return w;
}

// Soft weights: `peak` on cell `hot`, the rest spread evenly.
std::vector<float> peaked(int cells, int hot, float peak) {
  std::vector<float> w(size_t(cells), (1 - peak) / float(cells - 1));
  w[size_t(hot)] = peak;
  return w;
}

// Mean of `value(x, y)` over each cell of a gh x gw grid over a w x h picture -> the cell with the largest mean.
template <class F>
int brightest_cell(int w, int h, int gh, int gw, F value) {
  std::vector<double> sum(size_t(gh * gw), 0.0), count(size_t(gh * gw), 0.0);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const size_t g = size_t((y * gh / h) * gw + x * gw / w);
      sum[g] += value(x, y);
      count[g] += 1;
    }
  for (size_t g = 0; g < sum.size(); ++g) sum[g] /= count[g];
  return int(std::max_element(sum.begin(), sum.end()) - sum.begin());
}

double luma(const std::vector<float>& rgb, size_t p) { return 0.299 * rgb[p * 3] + 0.587 * rgb[p * 3 + 1] + 0.114 * rgb[p * 3 + 2]; }

TEST(ImageAttention, BilinearMapPeaksInTheArgmaxCellAndIsSmooth) {
  for (int hot : {0, 6, 9, 15}) {
    const ImageAttention a = grey_picture(64, 48, 4, 4, peaked(16, hot, 0.55f));
    const std::vector<float> map = viz::upsample_weights(a, 0, viz::Upsample::Bilinear);
    ASSERT_EQ(map.size(), size_t(64 * 48));
    EXPECT_FLOAT_EQ(*std::max_element(map.begin(), map.end()), 1.0f);  // scaled to a maximum of 1
    EXPECT_EQ(brightest_cell(64, 48, 4, 4, [&](int x, int y) { return map[size_t(y * 64 + x)]; }), hot) << hot;
    // smooth: neighbouring pixels never differ by more than one cell-to-cell step spread over a cell's 16 pixels
    for (int y = 0; y < 48; ++y)
      for (int x = 1; x < 64; ++x) ASSERT_LE(std::abs(map[size_t(y * 64 + x)] - map[size_t(y * 64 + x - 1)]), 1.0f / 16 + 1e-5f);
  }
}

TEST(ImageAttention, NearestMapIsExactlyTheHardCell) {
  const ImageAttention a = grey_picture(60, 30, 3, 5, one_hot(15, 7));  // row 1, col 2: x in [24, 36), y in [10, 20)
  const std::vector<float> map = viz::upsample_weights(a, 0, viz::Upsample::Nearest);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 60; ++x) {
      const bool inside = x >= 24 && x < 36 && y >= 10 && y < 20;
      ASSERT_EQ(map[size_t(y * 60 + x)], inside ? 1.0f : 0.0f) << x << "," << y;
    }
}

TEST(ImageAttention, BrightestBlendedRegionFollowsTheArgmaxCell) {
  for (viz::Blend blend : {viz::Blend::Mask, viz::Blend::Colormap})
    for (int hot = 0; hot < 9; ++hot) {
      const ImageAttention a = grey_picture(48, 48, 3, 3, peaked(9, hot, 0.6f));
      viz::OverlayStyle style;
      style.blend = blend;
      const std::vector<float> out = viz::blend_attention(a, viz::upsample_weights(a, 0, style.upsample), style);
      ASSERT_EQ(out.size(), a.rgb.size());
      EXPECT_EQ(brightest_cell(48, 48, 3, 3, [&](int x, int y) { return luma(out, size_t(y * 48 + x)); }), hot);
    }
}

TEST(ImageAttention, MaskDarkensUnattendedPixelsAndLightensAttendedOnes) {
  const ImageAttention a = grey_picture(20, 20, 2, 2, one_hot(4, 3));
  const std::vector<float> out = viz::blend_attention(a, viz::upsample_weights(a, 0, viz::Upsample::Nearest), {});
  EXPECT_NEAR(out[0], 0.125f, 1e-6f);                           // top left: a quarter of 0.5
  EXPECT_NEAR(out[size_t(19 * 20 + 19) * 3], 0.5f + 0.5f / 3, 1e-6f);  // bottom right: a third of the way to white
}

TEST(ImageAttention, StripHasOnePanelPerWordPlusTheImageAndShowsEachWordsCell) {
  TempDir dir("image_attention_strip");
  std::vector<float> w;
  for (int hot : {0, 8, 4}) {  // top left, bottom right, centre of a 3x3 grid
    const std::vector<float> row = one_hot(9, hot);
    w.insert(w.end(), row.begin(), row.end());
  }
  ImageAttention a = grey_picture(48, 48, 3, 3, w);
  a.words = {"a", "red", "circle"};
  viz::OverlayStyle style;
  style.upsample = viz::Upsample::Nearest;
  style.panel = 96;
  const viz::StripLayout L = viz::layout_strip(a, style);
  ASSERT_EQ(L.panels.size(), 4u);
  EXPECT_EQ(L.width, 2 * 10 + 4 * 96 + 3 * 8);
  const std::string path = dir.path + "/strip.png";
  viz::write_attention_strip(path, a, style);
  const image::Image png = image::read_image(path);
  EXPECT_EQ(png.width, int(L.width));
  EXPECT_EQ(png.height, int(L.height));
  // panel 0 is the plain picture; panel t + 1's brightest cell is word t's cell
  const int hot[] = {0, 8, 4};
  for (size_t p = 0; p < 4; ++p) {
    const viz::Box& b = L.panels[p];
    auto value = [&](int x, int y) {
      return double(png.at(int(b.y) + y, int(b.x) + x, 0));
    };
    if (p == 0) {
      EXPECT_NEAR(value(48, 48), 0.5, 1.0 / 255);
      continue;
    }
    EXPECT_EQ(brightest_cell(96, 96, 3, 3, value), hot[p - 1]) << "panel " << p;
  }
}

TEST(ImageAttention, WordOverlayIsOnePanelWide) {
  TempDir dir("image_attention_word");
  const ImageAttention a = grey_picture(32, 64, 2, 1, peaked(2, 1, 0.9f));
  const std::string path = dir.path + "/word.png";
  viz::write_word_overlay(path, a, 0);
  const image::Image png = image::read_image(path);
  EXPECT_EQ(png.width, 2 * 10 + 160);
  EXPECT_THROW(viz::write_word_overlay(path, a, 1), std::invalid_argument);
}

TEST(ImageAttention, AttentionFilesAreTheStripAndOneNumberedFilePerWord) {
  TempDir dir("image_attention_files");
  std::vector<float> w;
  for (int t = 0; t < 11; ++t) {
    const std::vector<float> row = one_hot(4, t % 4);
    w.insert(w.end(), row.begin(), row.end());
  }
  const ImageAttention a = grey_picture(16, 16, 2, 2, w);
  const std::string out = dir.path + "/new/folder";
  const std::vector<std::string> paths = viz::write_attention_files(out, "3-cat", a);
  ASSERT_EQ(paths.size(), 12u);
  EXPECT_EQ(paths[0], out + "/3-cat.strip.png");
  EXPECT_EQ(paths[1], out + "/3-cat.01.png");
  EXPECT_EQ(paths[11], out + "/3-cat.11.png");
  EXPECT_EQ(image::read_image(paths[0]).width, int(viz::layout_strip(a).width));
  for (size_t t = 1; t < paths.size(); ++t) EXPECT_EQ(image::read_image(paths[t]).width, 2 * 10 + 160) << paths[t];
  ImageAttention bad = a;
  bad.words.pop_back();
  EXPECT_THROW(viz::write_attention_files(dir.path + "/bad", "x", bad), std::invalid_argument);
  EXPECT_FALSE(std::filesystem::exists(dir.path + "/bad")) << "checked before anything is written";
}

void expect_error(const ImageAttention& a, const std::string& needle, const viz::OverlayStyle& style = {}) {
  try {
    viz::check_image_attention(a, style);
    ADD_FAILURE() << "no error, expected one mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ImageAttention, BadShapesGiveClearErrors) {
  const ImageAttention good = grey_picture(16, 16, 2, 2, one_hot(4, 1));
  EXPECT_NO_THROW(viz::check_image_attention(good));
  ImageAttention a = good;
  a.weights.push_back(0);
  expect_error(a, "weights hold 5 values, expected [T = 1, Gh * Gw = 4]");
  a = good;
  a.weights = {0.5f, 0.2f, 0.1f, 0.1f};
  expect_error(a, "weights row 0 (word 'w0') sums to 0.9");
  a = good;
  a.weights = {1.5f, -0.5f, 0, 0};
  expect_error(a, "weights[0, 1]");
  a = good;
  a.weights[2] = std::nanf("");
  expect_error(a, "not a finite");
  a = good;
  a.grid_w = 17;
  expect_error(a, "grid 2x17");
  a = good;
  a.rgb.pop_back();
  expect_error(a, "rgb holds 767 values, expected [H = 16, W = 16, 3]");
  a = good;
  a.words.clear();
  expect_error(a, "no words");
  a = good;
  a.words[0] = "\xff";
  expect_error(a, "words[0]: not valid UTF-8");
  viz::OverlayStyle tiny;
  tiny.panel = 4;
  expect_error(good, "style.panel", tiny);
  EXPECT_THROW(viz::write_attention_strip("strip.svg", good), std::invalid_argument);
}

}  // namespace
}  // namespace attn
