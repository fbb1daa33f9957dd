// decode/captioner.h: image files -> pixels -> the model's encode and the
// shared search -> per-word attention over the grid. The model here is a
// stand-in image model (the real one is models/show_attend_tell): its grid
// cells are the image's own cells, it looks at the brightest one at every step
// and says the same two words, so the plumbing's every step can be checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>

#include "attn/decode/captioner.h"
#include "attn/image/codec.h"
#include "attn/models/kinds.h"
#include "attn/viz/image_attention.h"
#include "train_test_util.h"

namespace attn {
namespace {

using attn::testing::TempDir;

constexpr int kWord1 = 5, kWord2 = 6, kVocab = 8;

class BrightestCellModel : public models::Seq2SeqModel {
public:
  BrightestCellModel(int gh, int gw) : Seq2SeqModel(config(), 0), gh_(gh), gw_(gw) {}

  // src [B, 3, H, W] -> values [B, Gh * Gw, 1]: each cell's mean brightness
  models::Encoded encode(const Tensor& src, const std::vector<int64_t>&) const override {
    const int64_t B = src.size(0), H = src.size(2), W = src.size(3), L = gh_ * gw_;
    std::vector<float> mean(size_t(B * L), 0.0f);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t c = 0; c < 3; ++c)
        for (int64_t y = 0; y < H; ++y)
          for (int64_t x = 0; x < W; ++x)
            mean[size_t(b * L + (y * gh_ / H) * gw_ + x * gw_ / W)] += src.data()[((b * 3 + c) * H + y) * W + x];
    models::Encoded e;
    e.memory.values() = Tensor::from(mean, {B, L, 1});
    e.memory.keys() = e.memory.values();
    e.memory.lengths() = Tensor::full({B}, float(L));
    e.state = models::DecoderState(B, B);  // no state: the step number says which word comes next
    return e;
  }

  // one-hot attention on the brightest cell; word 1, word 2, then EOS
  models::StepOutput step(const models::EncoderMemory& memory, const models::DecoderState&, const Tensor& prev,
                          int64_t t, models::StepDetail) const override {
    const int64_t N = prev.size(0), L = memory.values().size(1);
    models::StepOutput out;
    Tensor weights = Tensor::zeros({N, L});
    out.log_probs = Tensor::full({N, kVocab}, -20.0f);
    out.state = models::DecoderState(N, N);
    for (int64_t n = 0; n < N; ++n) {
      const float* v = memory.values().data() + n * L;
      weights.data()[n * L + (std::max_element(v, v + L) - v)] = 1.0f;
      const int word = t == 0 ? kWord1 : t == 1 ? kWord2 : config().specials.eos;
      out.log_probs.data()[n * kVocab + word] = -0.1f;
    }
    out.attention.add(models::kAttentionMap, weights);
    return out;
  }
  Tensor forced_features(const data::Seq2SeqBatch&) const override { throw std::logic_error("not trained"); }
  OutputLayer output_layer() const override { throw std::logic_error("not trained"); }

private:
  static models::ModelConfig config() {
    models::ModelConfig c;
    c.tgt_vocab = kVocab;
    return c;
  }
  int64_t gh_, gw_;
};

// A dark W x H picture with a white square filling grid cell `cell` of a gh x gw grid.
std::string bright_cell_png(const std::string& path, int w, int h, int gh, int gw, int cell) {
  image::Image img(w, h, 0.1f);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      if ((y * gh / h) * gw + x * gw / w == cell)
        for (int c = 0; c < 3; ++c) img.at(y, x, c) = 1.0f;
  image::write_png(path, img, false);
  return path;
}

TEST(Captioner, PixelsReachTheModelAndEachWordsAttentionComesBack) {
  TempDir dir("captioner");
  // files of another size than the model's input: resized to 24 x 24 on the way in
  const std::vector<std::string> paths = {bright_cell_png(dir.path + "/a.png", 48, 48, 3, 3, 2),
                                          bright_cell_png(dir.path + "/b.png", 48, 48, 3, 3, 7)};
  const decode::ImageModelInput in{24, 24, 3, 3, {}};
  const Tensor pixels = decode::image_batch(paths, in);
  ASSERT_EQ(pixels.dim(), 4);
  EXPECT_EQ(pixels.size(0), 2);
  EXPECT_EQ(pixels.size(1), 3);
  EXPECT_EQ(pixels.size(2), 24);
  EXPECT_EQ(pixels.size(3), 24);
  BrightestCellModel model(3, 3);
  model.train(false);
  for (int beam : {1, 3}) {
    decode::CaptionOptions o;
    o.beam = beam;
    const std::vector<decode::PieceCaption> caps = decode::caption_pixels(model, pixels, in, o);
    ASSERT_EQ(caps.size(), 2u);
    const int hot[] = {2, 7};
    for (size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(caps[i].tokens, (std::vector<int>{kWord1, kWord2})) << "beam " << beam;
      EXPECT_TRUE(caps[i].finished);
      ASSERT_EQ(caps[i].attention.size(), 2u * 9u);  // two words, the EOS row dropped
      for (size_t t = 0; t < 2; ++t)
        for (int g = 0; g < 9; ++g) EXPECT_EQ(caps[i].attention[t * 9 + size_t(g)], g == hot[i] ? 1.0f : 0.0f);
    }
  }
}

// The whole path of `attn caption --attention`: file -> pixels -> caption ->
// words -> overlay files over the original picture, whose word panels are
// brightest where the model looked.
TEST(Captioner, OverlaysOfACaptionShowWhereTheModelLooked) {
  TempDir dir("captioner_overlays");
  const std::string path = bright_cell_png(dir.path + "/scene.png", 64, 64, 4, 4, 9);  // row 2, col 1
  const decode::ImageModelInput in{32, 32, 4, 4, {}};
  BrightestCellModel model(4, 4);
  model.train(false);
  const decode::PieceCaption c = decode::caption_pixels(model, decode::image_batch({path}, in), in).at(0);
  const std::vector<std::string> pieces = {"\xE2\x96\x81" "small", "\xE2\x96\x81" "circle"};  // ids 5, 6
  const decode::WordCaption words = decode::merge_pieces(pieces, c.attention, 16);
  const image::Image picture = image::read_image(path);
  viz::ImageAttention a;
  a.width = picture.width;
  a.height = picture.height;
  a.rgb = picture.rgb;
  a.grid_h = a.grid_w = 4;
  a.weights = words.attention;
  a.words = words.words;
  viz::OverlayStyle style;
  style.panel = 128;  // 2x the picture: whole pixels
  const std::vector<std::string> files = viz::write_attention_files(dir.path + "/att", "1-scene", a, style);
  ASSERT_EQ(files.size(), 3u);
  const viz::StripLayout L = viz::layout_strip(a, style);
  const image::Image strip = image::read_image(files[0]);
  for (size_t p = 1; p < 3; ++p) {  // each word's panel: darkened outside the bright cell, the cell itself lifted
    const viz::Box& b = L.panels[p];
    auto at = [&](int x, int y) { return strip.at(int(b.y) + y, int(b.x) + x, 0); };
    EXPECT_NEAR(at(48, 80), 1.0f, 1.0f / 255) << "the centre of cell 9 (x 32..64, y 64..96 of the panel)";
    EXPECT_LT(at(100, 10), 0.1f) << "outside";
  }
}

TEST(Captioner, MaxWordsCutsTheCaptionOff) {
  TempDir dir("captioner_cut");
  const decode::ImageModelInput in{16, 16, 2, 2, {}};
  const Tensor pixels = decode::image_batch({bright_cell_png(dir.path + "/a.png", 16, 16, 2, 2, 3)}, in);
  BrightestCellModel model(2, 2);
  model.train(false);
  decode::CaptionOptions o;
  o.max_words = 1;
  const decode::PieceCaption c = decode::caption_pixels(model, pixels, in, o).at(0);
  EXPECT_EQ(c.tokens, std::vector<int>{kWord1});
  EXPECT_FALSE(c.finished);
  EXPECT_EQ(c.attention.size(), 4u);
}

TEST(Captioner, BadInputsGiveClearErrors) {
  TempDir dir("captioner_bad");
  const decode::ImageModelInput in{16, 16, 2, 2, {}};
  BrightestCellModel model(2, 2);
  model.train(false);
  try {
    decode::caption_pixels(model, Tensor::zeros({1, 3, 8, 16}), in);
    ADD_FAILURE() << "no error for pixels of the wrong size";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("expects pixels [B, 3, 16, 16]"), std::string::npos) << e.what();
  }
  EXPECT_THROW(decode::image_batch({}, in), std::invalid_argument);
  try {
    decode::image_batch({dir.path + "/missing.png"}, in);
    ADD_FAILURE() << "no error for a missing file";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.png"), std::string::npos) << e.what();
  }
}

TEST(Captioner, PiecesMergeIntoWordsWithTheMeanOfTheirRows) {
  const std::vector<std::string> pieces = {"\xE2\x96\x81" "a", "\xE2\x96\x81" "re", "d", "\xE2\x96\x81" "circle"};
  const std::vector<float> attention = {1, 0, 0,  0, 1, 0,  0, 0.5f, 0.5f,  0.2f, 0.2f, 0.6f};
  const decode::WordCaption w = decode::merge_pieces(pieces, attention, 3);
  EXPECT_EQ(w.words, (std::vector<std::string>{"a", "red", "circle"}));
  EXPECT_EQ(w.attention, (std::vector<float>{1, 0, 0, 0, 0.75f, 0.25f, 0.2f, 0.2f, 0.6f}));
  EXPECT_THROW(decode::merge_pieces(pieces, attention, 4), std::invalid_argument);
}

TEST(Captioner, TextModelsHaveNoImageInput) {
  for (const char* t : {"rnnsearch", "luong"})
    EXPECT_FALSE(decode::image_model_input(models::model_config(t)).has_value()) << t;
}

}  // namespace
}  // namespace attn
