// Fused scaled dot-product attention (see flash.h): the glue around the kernels
// of kernels/flash.h (compiled per instruction set): contiguous copies of
// strided keys and values, and the kernels' scratch memory.
#include "attn/attention/flash.h"

#include <algorithm>

#include "attn/attention/checks.h"
#include "attn/kernels/flash.h"
#include "attn/tensor/tensor.h"

namespace attn::attention::flash {
namespace {

// Keys or values stored with a row stride other than their width (a head inside
// [B, L, 3, H, D]) are copied to a contiguous [B, H, L, W] first: every query block
// streams the whole head's keys and values, and rows 3E floats apart alias to a
// fraction of the cache sets (measured: the strided forward at L = 2048 was ~1.5x
// slower than this copy plus the contiguous kernel). Returns an undefined tensor
// (and leaves p alone) when the operand is contiguous already.
Tensor pack_rows(const float*& ptr, Layout& l, int64_t B, int64_t H, int64_t L, int64_t W) {
  if (l.si == W && l.sh == L * W && l.sb == H * L * W) return Tensor();
  Tensor t = Tensor::empty({B, H, L, W});
  const float* src = ptr;
  const Layout sl = l;
  float* dst = t.data();
#pragma omp parallel for if (B * H * L * W > (1 << 16))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const float* s = src + (bh / H) * sl.sb + (bh % H) * sl.sh;
    float* d = dst + bh * L * W;
    for (int64_t j = 0; j < L; ++j) std::copy(s + j * sl.si, s + j * sl.si + W, d + j * W);
  }
  ptr = t.data();
  l = contiguous(H, L, W);
  return t;
}

}  // namespace

void set_contiguous(Problem& p) {
  p.lq = contiguous(p.H, p.Lq, p.D), p.lk = contiguous(p.H, p.Lk, p.D), p.lv = contiguous(p.H, p.Lk, p.Dv),
  p.lo = contiguous(p.H, p.Lq, p.Dv);
}

void forward(const Problem& p_in, float* out, float* lse) {
  Problem p = p_in;
  Tensor k_packed = pack_rows(p.k, p.lk, p.B, p.H, p.Lk, p.D), v_packed = pack_rows(p.v, p.lv, p.B, p.H, p.Lk, p.Dv);
  Tensor scratch;
  kernels::forward(p, out, lse, detail::pooled_scratch(scratch));
}

void backward(const Problem& p_in, const float* out, const float* dout, const float* lse, float* dq, float* dk,
              float* dv) {
  Problem p = p_in;
  const Layout gk = p.lk, gv = p.lv;  // dk, dv are written as k, v are stored
  Tensor k_packed = pack_rows(p.k, p.lk, p.B, p.H, p.Lk, p.D), v_packed = pack_rows(p.v, p.lv, p.B, p.H, p.Lk, p.Dv);
  Tensor scratch;
  kernels::backward(p, gk, gv, out, dout, lse, dq, dk, dv, detail::pooled_scratch(scratch));
}

}  // namespace attn::attention::flash
