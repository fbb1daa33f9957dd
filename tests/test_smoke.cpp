#include <gtest/gtest.h>
#include "attn/autograd/ops.h"
using namespace attn;
TEST(Smoke, MatmulBackward) {
  Rng rng(1);
  Tensor a = randn({3, 4}, rng).set_requires_grad();
  Tensor b = randn({4, 5}, rng).set_requires_grad();
  Tensor y = sum_all(matmul(a, b));
  backward(y);
  ASSERT_TRUE(a.grad().defined());
  EXPECT_EQ(a.grad().shape(), (Shape{3, 4}));
}
