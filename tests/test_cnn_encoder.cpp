// The CNN encoder's contract beyond parity: the documented grid order (cell
// g = row*Gw + col), batch independence (GroupNorm), parameters saved and
// loaded like every module's, and clear errors for bad shapes.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "attn/nn/cnn_encoder.h"
#include "attn/nn/load_params.h"
#include "attn/tensor/safetensors.h"

namespace attn::nn {
namespace {

CnnEncoderOptions small_options() {
  CnnEncoderOptions opt;
  opt.channels = {8, 8, 6};
  opt.groups = 2;
  return opt;
}

// Throws std::invalid_argument whose message contains `needle`.
template <class F>
void expect_error(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(CnnEncoder, GridCellIsRowTimesWidthPlusColumn) {
  Rng rng(5);
  CnnEncoder enc(small_options(), rng);
  Tensor images = rand_uniform({2, 3, 24, 40}, rng, 0.0f, 1.0f);  // 3 x 5 grid: rows and columns differ
  NoGradGuard ng;
  Tensor grid = enc.forward(images);
  EXPECT_EQ(enc.grid_shape(24, 40), (std::pair<int64_t, int64_t>{3, 5}));
  ASSERT_EQ(grid.shape(), (Shape{2, 15, 6}));
  Tensor map = images;  // the final feature map [2, 6, 3, 5], block by block
  for (const auto& b : enc.blocks) map = b->forward(map);
  ASSERT_EQ(map.shape(), (Shape{2, 6, 3, 5}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t row = 0; row < 3; ++row)
      for (int64_t col = 0; col < 5; ++col)
        for (int64_t d = 0; d < 6; ++d)
          ASSERT_EQ(grid.data()[(b * 15 + row * 5 + col) * 6 + d], map.data()[((b * 6 + d) * 3 + row) * 5 + col])
              << "image " << b << " row " << row << " col " << col << " feature " << d;
}

TEST(CnnEncoder, SeedWalkThroughGridIsThreeByThree) {
  Rng rng(6);
  CnnEncoder enc(small_options(), rng);
  NoGradGuard ng;
  EXPECT_EQ(enc.forward(rand_uniform({1, 3, 24, 24}, rng, 0.0f, 1.0f)).shape(), (Shape{1, 9, 6}));
  EXPECT_EQ(enc.forward(rand_uniform({1, 3, 64, 64}, rng, 0.0f, 1.0f)).shape(), (Shape{1, 64, 6}));
}

// Context blocks run after the pooling blocks at the grid's resolution: the
// grid and D stay, the block is conv -> norm -> ReLU with no pool, D -> D.
TEST(CnnEncoder, ContextBlocksKeepTheGrid) {
  Rng rng(8);
  CnnEncoderOptions opt = small_options();
  opt.context_blocks = 2;
  CnnEncoder enc(opt, rng);
  ASSERT_EQ(enc.blocks.size(), 5u);
  EXPECT_EQ(enc.grid_shape(24, 40), (std::pair<int64_t, int64_t>{3, 5}));
  EXPECT_EQ(enc.parameter("blocks.4.conv.weight").shape(), (Shape{6, 6, 3, 3}));
  Tensor images = rand_uniform({2, 3, 24, 40}, rng, 0.0f, 1.0f);
  NoGradGuard ng;
  Tensor grid = enc.forward(images);
  ASSERT_EQ(grid.shape(), (Shape{2, 15, 6}));
  Tensor map = images;
  for (size_t i = 0; i < 3; ++i) map = enc.blocks[i]->forward(map);
  for (size_t i = 3; i < 5; ++i) {
    const CnnBlock& b = *enc.blocks[i];
    map = relu(b.norm->forward(b.conv->forward(map)));  // no pool
  }
  ASSERT_EQ(map.shape(), (Shape{2, 6, 3, 5}));
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t g = 0; g < 15; ++g)
      for (int64_t d = 0; d < 6; ++d)
        ASSERT_EQ(grid.data()[(b * 15 + g) * 6 + d], map.data()[(b * 6 + d) * 15 + g]) << "image " << b << " cell " << g;
  opt.context_blocks = -1;
  expect_error([&] { CnnEncoder bad(opt, rng); }, "context_blocks");
}

// An image's annotations do not depend on the other images of its batch (what
// GroupNorm buys over BatchNorm: beams and batches of any size agree).
TEST(CnnEncoder, ImagesAreEncodedIndependentlyOfTheirBatch) {
  Rng rng(7);
  CnnEncoder enc(small_options(), rng);
  Tensor images = rand_uniform({3, 3, 16, 16}, rng, 0.0f, 1.0f);
  NoGradGuard ng;
  Tensor all = enc.forward(images);
  for (int64_t b = 0; b < 3; ++b) {
    Tensor one = enc.forward(images.narrow0(b, 1));
    Tensor row = all.narrow0(b, 1);
    for (int64_t i = 0; i < one.numel(); ++i) ASSERT_NEAR(one.data()[i], row.data()[i], 1e-5f) << "image " << b << " element " << i;
  }
}

TEST(CnnEncoder, ParametersSaveAndLoadByName) {
  Rng a(8), b(9);
  CnnEncoder enc(small_options(), a), other(small_options(), b);
  const std::string path = ::testing::TempDir() + "cnn_encoder_params.safetensors";
  save_safetensors(path, enc.named_parameters());
  load_into_params(load_safetensors(path), other.named_parameters());
  std::remove(path.c_str());
  Tensor images = rand_uniform({2, 3, 16, 16}, a, 0.0f, 1.0f);
  NoGradGuard ng;
  Tensor x = enc.forward(images), y = other.forward(images);
  for (int64_t i = 0; i < x.numel(); ++i) ASSERT_EQ(x.data()[i], y.data()[i]) << "element " << i;
  std::vector<std::string> names;
  for (auto& [n, t] : enc.named_parameters()) names.push_back(n);
  EXPECT_EQ(names.front(), "blocks.0.conv.weight");
  EXPECT_EQ(names.back(), "blocks.2.norm.bias");
}

TEST(CnnEncoder, BadShapesAreNamed) {
  Rng rng(10);
  CnnEncoder enc(small_options(), rng);
  expect_error([&] { enc.forward(Tensor::zeros({1, 1, 16, 16})); }, "[1, 1, 16, 16]");
  expect_error([&] { enc.forward(Tensor::zeros({1, 3, 4, 16})); }, "too small");
  CnnEncoderOptions bad = small_options();
  bad.channels = {8, 7};
  expect_error([&] { CnnEncoder e(bad, rng); }, "7 channels in 2 groups");
  expect_error([&] { conv2d(Tensor::zeros({1, 2, 5, 5}), Tensor::zeros({4, 3, 3, 3}), Tensor()); }, "input channels");
  expect_error([&] { conv2d(Tensor::zeros({1, 3, 2, 2}), Tensor::zeros({4, 3, 3, 3}), Tensor()); }, "larger than the padded input");
  expect_error([&] { max_pool2d(Tensor::zeros({1, 3, 1, 4}), 2); }, "[1, 3, 1, 4]");
  expect_error([&] { group_norm(Tensor::zeros({1, 6, 2, 2}), 4, Tensor::ones({6}), Tensor::zeros({6})); }, "divisible");
}

}  // namespace
}  // namespace attn::nn
