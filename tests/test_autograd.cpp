// The tape's bookkeeping: accumulation across backward calls, shared gradients,
// no-grad mode.
#include <gtest/gtest.h>

#include "attn/autograd/ops.h"

namespace attn {
namespace {

// add() hands one gradient tensor to both inputs; the leaves must still own
// separate .grad storage, since .grad is updated in place on the next backward.
TEST(Autograd, SharedGradientsAreNotAliased) {
  Tensor a = Tensor::ones({3}).set_requires_grad(), b = Tensor::ones({3}).set_requires_grad();
  backward(sum_all(add(a, b)));
  backward(sum_all(mul(add(a, b), Tensor::full({3}, 2.0f))));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(a.grad().data()[i], 3.0f);
    EXPECT_EQ(b.grad().data()[i], 3.0f);
  }
  a.grad().data()[0] = 100.0f;
  EXPECT_EQ(b.grad().data()[0], 3.0f) << "a.grad and b.grad share storage";
}

TEST(Autograd, GradientsAccumulateAcrossCalls) {
  Rng rng(1);
  Tensor x = randn({4, 5}, rng).set_requires_grad(), w = randn({5, 2}, rng).set_requires_grad();
  backward(sum_all(matmul(x, w)));
  Tensor g1 = w.grad().clone();
  backward(sum_all(matmul(x, w)));
  for (int64_t i = 0; i < g1.numel(); ++i) EXPECT_FLOAT_EQ(w.grad().data()[i], 2 * g1.data()[i]);
  w.zero_grad();
  EXPECT_FALSE(w.grad().defined());
}

TEST(Autograd, NoGradRecordsNothing) {
  Tensor x = Tensor::ones({2}).set_requires_grad();
  NoGradGuard ng;
  Tensor y = mul(x, x);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_FALSE(y.grad_fn());
}

TEST(Autograd, BackwardFromANonScalarNeedsASeed) {
  Tensor x = Tensor::ones({2}).set_requires_grad();
  EXPECT_THROW(backward(mul(x, x)), std::invalid_argument);
  backward(mul(x, x), Tensor::full({2}, 0.5f));
  EXPECT_FLOAT_EQ(x.grad().data()[1], 1.0f);  // d(x^2) = 2x * 0.5
}

}  // namespace
}  // namespace attn
