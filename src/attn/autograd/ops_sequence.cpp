#include "attn/autograd/ops_sequence.h"

#include <cstring>
#include <stdexcept>

namespace attn {

std::vector<Tensor> unbind0(const Tensor& x) {
  if (!x.defined() || x.dim() < 1) throw std::invalid_argument("unbind0: needs a tensor of rank >= 1");
  const int64_t T = x.size(0);
  Shape row_shape(x.shape().begin() + 1, x.shape().end());
  std::vector<Tensor> outs;
  outs.reserve(size_t(T));
  for (int64_t t = 0; t < T; ++t) outs.push_back(x.narrow0(t, 1).view(row_shape));
  std::vector<Tensor*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(&o);
  autograd::record("unbind", {x}, out_ptrs, [xs = x.shape(), T](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out_t = x[t]  =>  dx[t] = d(out_t)
    Tensor dx = Tensor::empty(xs);
    const int64_t row = T ? dx.numel() / T : 0;
    for (int64_t t = 0; t < T; ++t) {
      float* dst = dx.data() + t * row;
      if (d[size_t(t)].defined())
        std::memcpy(dst, d[size_t(t)].data(), size_t(row) * sizeof(float));
      else
        std::memset(dst, 0, size_t(row) * sizeof(float));
    }
    return {dx};
  });
  return outs;
}

}  // namespace attn
