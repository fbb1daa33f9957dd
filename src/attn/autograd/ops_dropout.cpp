// The counter-based dropout op ("dropout_hashed", see ops_dropout.h).
#include "attn/autograd/ops_dropout.h"

#include <stdexcept>
#include <string>

#include "attn/autograd/node.h"
#include "attn/kernels/dropout.h"

namespace attn {

Tensor dropout_hashed(const Tensor& x, float p, uint64_t seed) {
  if (!(p >= 0.0f && p < 1.0f)) throw std::invalid_argument("dropout_hashed: p = " + std::to_string(p) + " outside [0, 1)");
  if (p == 0.0f || x.numel() == 0) return x;
  const int64_t n = x.dim() ? x.size(-1) : 1, rows = x.numel() / n;
  Tensor out = Tensor::empty(x.shape());
  kernels::dropout::apply(x.data(), out.data(), rows, n, p, seed);
  autograd::record("dropout_hashed", {x}, out, [rows, n, p, seed](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out = x * mask(seed): dx = dout * mask(seed), the same pattern regenerated
    Tensor dx = Tensor::empty(d[0].shape());
    kernels::dropout::apply(d[0].data(), dx.data(), rows, n, p, seed);
    return {dx};
  });
  return out;
}

}  // namespace attn
