// Trains y = 2x + 1 with attn's Linear and autograd: proves the installed
// headers, library and link dependencies are complete.
#include <attn/autograd/ops.h>
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
  return std::fabs(w - 2) < 1e-2 && std::fabs(b - 1) < 1e-2 ? 0 : 1;
}
