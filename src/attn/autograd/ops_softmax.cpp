// softmax / log_softmax over any axis, with an optional broadcast mask.
#include "attn/autograd/ops.h"
#include "attn/tensor/kernels.h"

namespace attn {

namespace {
// The kernels work on the last axis; another axis is moved there and back.
std::vector<int> swap_last(int rank, int axis) {
  std::vector<int> p(rank);
  for (int i = 0; i < rank; ++i) p[i] = i;
  std::swap(p[axis], p[rank - 1]);
  return p;
}

Tensor softmax_impl(const Tensor& x, int axis, const Tensor& mask_in, bool log) {
  int a = x.shape().normalize_axis(axis);
  bool moved = a != x.dim() - 1;
  std::vector<int> perm = swap_last(x.dim(), a);
  Tensor mask = mask_in;
  if (mask.defined() && moved) mask = kernels::permute(kernels::expand_to(mask, x.shape()), perm);
  Tensor xl = moved ? kernels::permute(x, perm) : x;
  Tensor yl = kernels::softmax_lastdim(xl, mask, log);
  Tensor out = moved ? kernels::permute(yl, perm) : yl;
  // yl is `out` itself when the axis is last: keep it detached, or the node
  // would hold its own output (whose grad_fn is the node) and never be freed
  autograd::record(log ? "log_softmax" : "softmax", {x}, out,
                   [yl = yl.detach(), mask = mask.defined() ? mask.detach() : mask, perm, moved, log](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     Tensor dy = moved ? kernels::permute(d[0], perm) : d[0];
                     Tensor dx = kernels::softmax_lastdim_backward(yl, dy, mask, log);
                     return {moved ? kernels::permute(dx, perm) : dx};
                   });
  return out;
}
}  // namespace

Tensor softmax(const Tensor& x, int axis, const Tensor& mask) { return softmax_impl(x, axis, mask, false); }
Tensor log_softmax(const Tensor& x, int axis, const Tensor& mask) { return softmax_impl(x, axis, mask, true); }

}  // namespace attn
