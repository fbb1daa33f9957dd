// Trains y = 2x + 1 with attn's Linear and autograd, and runs docs/library.md's
// attention example: proves the installed headers, library and link
// dependencies are complete.
#include <attn/autograd/ops.h>
#include <attn/nn/attention_layer.h>
#include <attn/nn/layers.h>

#include <cmath>
#include <cstdio>

int main() {
  attn::Rng rng(3);
  attn::nn::Linear lin(1, 1, true, rng);
  attn::Tensor x = attn::Tensor::from({0, 1, 2, 3}, {4, 1}), y = attn::Tensor::from({1, 3, 5, 7}, {4, 1});
  for (int step = 0; step < 500; ++step) {
    lin.zero_grad();
    attn::Tensor d = attn::sub(lin.forward(x), y);
    attn::backward(attn::mean_all(attn::mul(d, d)));
    for (auto& p : lin.parameters()) {
      attn::Tensor g = p.grad();
      for (int64_t i = 0; i < p.numel(); ++i) p.data()[i] -= 0.05f * g.data()[i];
    }
  }
  float w = lin.weight.item(), b = lin.bias.item();
  std::printf("w=%.3f b=%.3f\n", w, b);
  if (!(std::fabs(w - 2) < 1e-2 && std::fabs(b - 1) < 1e-2)) return 1;

  // docs/library.md, "Using the library": Bahdanau's additive score, queries of 8, keys of 6
  using namespace attn;
  nn::AttentionLayer att(nn::AttentionLayerOptions(nn::ScoreKind::Additive, 8, 6).set_attn_dim(16), rng);
  Tensor q = randn({2, 1, 5, 8}, rng);  // [batch, heads, q_len, 8]
  Tensor k = randn({2, 1, 7, 6}, rng);  // [batch, heads, k_len, 6]; here also the values
  attention::Mask mask;
  mask.key_lengths = Tensor::from({7, 4}, {2});  // the second sentence has 4 real keys
  attention::AttentionOutput out = att.forward(q, k, k, mask, /*need_weights=*/true);
  // out.context [2, 1, 5, 6]; out.weights [2, 1, 5, 7], rows sum to 1, padding keys 0
  if (out.context.shape() != Shape({2, 1, 5, 6}) || out.weights.shape() != Shape({2, 1, 5, 7})) return 1;
  const float* wt = out.weights.data();
  float row = 0.0f, padding = 0.0f;
  for (int j = 0; j < 7; ++j) (j < 4 ? row : padding) += wt[(1 * 5 + 0) * 7 + j];
  std::printf("weights of sentence 2, query 1: sum %.4f over the real keys, %.1f on padding\n", row, padding);
  if (!(std::fabs(row - 1.0f) < 1e-5f && padding == 0.0f)) return 1;
  q.set_requires_grad();
  backward(sum_all(att.forward(q, k, k, mask).context));  // gradients reach q and W1, W2, v, bias
  return q.grad().defined() && att.W1.grad().defined() && att.bias.grad().defined() ? 0 : 1;
}
