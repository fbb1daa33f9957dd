// Parity with PyTorch (the oracle script tests/oracle/ops.py) for the basic
// layers: forward values and every gradient, on the oracle's own inputs.
#include <gtest/gtest.h>

#include "attn/autograd/ops.h"
#include "oracle.h"

namespace attn::testing::parity_ops_test {
namespace {

// The oracle's leaf tensors as fresh leaves that require grad.
Tensor leaf(const SafetensorsFile& f, const std::string& name) {
  Tensor t = f.get(name).clone();
  t.set_requires_grad(true);
  return t;
}

// Backpropagates sum(out * R) with the oracle's R.
void backprop_projection(const Tensor& out, const SafetensorsFile& f) { backward(out, f.get("R")); }

// 1e-5 where the op is a single kernel, as the issue asks; GEMM-based ops sum
// over their inner axis in another order than torch's MKL/OpenBLAS: 1e-4.
TEST(ParityTorch, Linear) {
  auto f = run_oracle("ops.py", "linear");
  Tensor x = leaf(f, "x"), w = leaf(f, "weight"), b = leaf(f, "bias");
  Tensor y = linear(x, w, b);
  EXPECT_CLOSE(y, f.get("out"), 1e-4, "linear output");
  backprop_projection(y, f);
  EXPECT_CLOSE(x.grad(), f.get("grad.x"), 1e-4, "dx");
  EXPECT_CLOSE(w.grad(), f.get("grad.weight"), 1e-4, "dweight");
  EXPECT_CLOSE(b.grad(), f.get("grad.bias"), 1e-4, "dbias");
}

TEST(ParityTorch, EmbeddingWithPadding) {
  auto f = run_oracle("ops.py", "embedding");
  Tensor w = leaf(f, "weight");
  Tensor y = embedding(w, f.get("ids"), 3);
  EXPECT_CLOSE(y, f.get("out"), 1e-6, "embedding output");
  backprop_projection(y, f);
  EXPECT_CLOSE(w.grad(), f.get("grad.weight"), 1e-5, "dweight");
  for (int k = 0; k < 16; ++k) EXPECT_EQ(w.grad().data()[3 * 16 + k], 0.0f) << "padding row got a gradient";
}

TEST(ParityTorch, MaskedSoftmaxAndLogSoftmax) {
  for (const char* which : {"softmax", "log_softmax"}) {
    SCOPED_TRACE(which);
    auto f = run_oracle("ops.py", which);
    Tensor x = leaf(f, "x");
    bool log = std::string(which) == "log_softmax";
    Tensor y = log ? log_softmax(x, -1, f.get("mask")) : softmax(x, -1, f.get("mask"));
    EXPECT_CLOSE(y, f.get("out"), 1e-5, "output");
    for (int64_t i = 0; i < y.numel(); ++i) ASSERT_TRUE(std::isfinite(y.data()[i])) << "non-finite output at " << i;
    backprop_projection(y, f);
    // dx = y (dy - sum(dy y)) cancels where dy is close to the row's weighted
    // mean: there the float32 rounding of the forward's y (1e-7 relative)
    // becomes up to ~3e-5 of the small result, against a float64 reference.
    EXPECT_CLOSE(x.grad(), f.get("grad.x"), 1e-4, "dx");
  }
}

TEST(ParityTorch, CrossEntropyLabelSmoothingIgnoreIndex) {
  auto f = run_oracle("ops.py", "cross_entropy");
  Tensor logits = leaf(f, "logits");
  CrossEntropyOptions o;
  o.ignore_index = 0;
  o.label_smoothing = 0.1f;
  Tensor loss = cross_entropy(logits, f.get("targets"), o);
  EXPECT_CLOSE(loss, f.get("out"), 1e-5, "loss");
  backward(loss);
  EXPECT_CLOSE(logits.grad(), f.get("grad.logits"), 1e-5, "dlogits");
}

TEST(ParityTorch, LayerNorm) {
  auto f = run_oracle("ops.py", "layer_norm");
  Tensor x = leaf(f, "x"), w = leaf(f, "weight"), b = leaf(f, "bias");
  Tensor y = layer_norm(x, w, b, 1e-5f);
  EXPECT_CLOSE(y, f.get("out"), 1e-5, "output");
  backprop_projection(y, f);
  EXPECT_CLOSE(x.grad(), f.get("grad.x"), 1e-4, "dx");
  EXPECT_CLOSE(w.grad(), f.get("grad.weight"), 1e-5, "dweight");
  EXPECT_CLOSE(b.grad(), f.get("grad.bias"), 1e-5, "dbias");
}

}  // namespace
}  // namespace attn::testing::parity_ops_test
