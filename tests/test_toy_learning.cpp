// End to end: the layers, autograd and optimizer together learn a task.
#include <gtest/gtest.h>

#include <cstring>

#include "attn/train/toy_trainer.h"

namespace attn {
namespace {

// Digit reversal is not learnable from unigram statistics: a model whose
// gradients were wrong (or that ignored its source) stays near the entropy of
// a uniformly random digit, ln 10 = 2.30 nats per token, and at 0% exact
// matches. The thresholds below need the encoder state to carry the source.
TEST(ToyLearning, GruEncoderDecoderLearnsToReverseDigits) {
  train::ToyTrainOptions opt;
  opt.steps = 400;
  opt.min_len = 3;
  opt.max_len = 5;
  opt.model.hidden = 64;
  opt.log_every = 100;
  std::vector<double> losses;
  auto r = train::train_toy_reverse(opt, [&](const train::ToyProgress& p) { losses.push_back(p.loss); });
  ASSERT_EQ(losses.size(), 4u);
  EXPECT_GT(losses.front(), 1.0) << "the first window should still be far from solved";
  EXPECT_LT(r.final_loss, 0.35);
  EXPECT_GT(r.eval_accuracy, 0.7);
}

// Same seed and thread count => bit-identical parameters.
TEST(ToyLearning, SameSeedSameNumbers) {
  train::ToyTrainOptions opt;
  opt.steps = 30;
  opt.model.hidden = 32;
  opt.log_every = 30;
  auto a = train::train_toy_reverse(opt);
  auto b = train::train_toy_reverse(opt);
  ASSERT_EQ(a.parameters.size(), b.parameters.size());
  for (size_t i = 0; i < a.parameters.size(); ++i) {
    const Tensor &x = a.parameters[i].second, &y = b.parameters[i].second;
    ASSERT_EQ(x.shape(), y.shape());
    EXPECT_EQ(0, std::memcmp(x.data(), y.data(), size_t(x.numel()) * 4)) << a.parameters[i].first << " differs";
  }
  opt.seed = 2;
  auto c = train::train_toy_reverse(opt);
  const Tensor &x = a.parameters[0].second, &z = c.parameters[0].second;
  EXPECT_NE(0, std::memcmp(x.data(), z.data(), size_t(x.numel()) * 4)) << "another seed gave the same parameters";
}

}  // namespace
}  // namespace attn
