// Masks: validation, the combined 0/1 mask tensor, and the dropout pattern;
// the kernels' pooled scratch (checks.h).
#include <stdexcept>

#include "attn/attention/checks.h"
#include "attn/cpu/threading.h"
#include "attn/kernels/dropout_hash.h"

namespace attn::attention {
namespace detail {

void check_qkv(const char* fn, const Tensor& q, const Tensor& k, const Tensor& v, bool same_dim) {
  auto fail = [&](const std::string& why) {
    throw std::invalid_argument(std::string(fn) + ": " + why + "; got q " + shape_str(q) + ", k " + shape_str(k) +
                                ", v " + shape_str(v) + " (expects q [B, H, Lq, D], k [B, H, Lk, " +
                                (same_dim ? "D" : "Dk") + "], v [B, H, Lk, Dv])");
  };
  if (!q.defined() || !k.defined() || !v.defined()) fail("undefined input");
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) fail("inputs must be 4-D");
  if (q.size(0) != k.size(0) || q.size(0) != v.size(0) || q.size(1) != k.size(1) || q.size(1) != v.size(1))
    fail("batch and head axes differ");
  if (k.size(2) != v.size(2)) fail("k and v have different lengths");
  if (same_dim && q.size(3) != k.size(3)) fail("q and k sizes differ");
}

void check_mask(const char* fn, const Mask& m, int64_t B, int64_t H, int64_t Lq, int64_t Lk) {
  if (m.key_lengths.defined()) {
    if (m.key_lengths.dim() != 1 || m.key_lengths.size(0) != B)
      throw std::invalid_argument(std::string(fn) + ": key_lengths " + shape_str(m.key_lengths) + " for batch " +
                                  std::to_string(B) + " (expects [B])");
    lengths_in_range(fn, "key_lengths", m.key_lengths, Lk);
  }
  if (m.keep.defined()) {
    Shape full{B, H, Lq, Lk};
    bool ok = m.keep.dim() <= 4;
    if (ok) {
      try {
        ok = broadcast_shapes(m.keep.shape(), full) == full;
      } catch (const std::invalid_argument&) {
        ok = false;
      }
    }
    if (!ok)
      throw std::invalid_argument(std::string(fn) + ": keep mask " + shape_str(m.keep) + " does not broadcast to " +
                                  full.str() + " [B, H, Lq, Lk]");
  }
}

void broadcast_strides4(const Tensor& keep, const int64_t dims[4], int64_t strides[4]) {
  int64_t s = 1;
  for (int i = 3, j = keep.dim() - 1; i >= 0; --i, --j) {
    int64_t d = j >= 0 ? keep.shape()[j] : 1;
    strides[i] = (d == 1 && dims[i] != 1) || j < 0 ? 0 : s;
    s *= d;
  }
}

KernelScratch pooled_scratch(Tensor& holder) {
  KernelScratch s;
  s.ctx = &holder;
  s.get = [](void* ctx, int64_t floats) -> float* {
    Tensor& t = *static_cast<Tensor*>(ctx);
    t = Tensor::empty({floats});
    return t.data();
  };
  return s;
}

}  // namespace detail

Tensor mask_tensor(const Mask& m, int64_t B, int64_t H, int64_t Lq, int64_t Lk) {
  detail::check_mask("mask_tensor", m, B, H, Lq, Lk);
  if (m.empty()) return Tensor();
  // the head axis is the third from the right (right-aligned broadcasting)
  bool heads = m.keep.defined() && m.keep.dim() >= 3 && m.keep.shape()[m.keep.dim() - 3] == H && H != 1;
  const int64_t Hm = heads ? H : 1;
  const int64_t dims[4] = {B, Hm, Lq, Lk};
  int64_t st[4] = {0, 0, 0, 0};
  if (m.keep.defined()) detail::broadcast_strides4(m.keep, dims, st);
  Tensor out = Tensor::empty({B, Hm, Lq, Lk});
  float* o = out.data();
  const float* lens = m.key_lengths.defined() ? m.key_lengths.data() : nullptr;
  const float* keep = m.keep.defined() ? m.keep.data() : nullptr;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hm; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        float* row = o + ((b * Hm + h) * Lq + i) * Lk;
        const int64_t len = lens ? int64_t(lens[b]) : Lk;
        for (int64_t j = 0; j < Lk; ++j) {
          bool vis = j < len && (!m.causal || j <= i);
          if (vis && keep) vis = keep[b * st[0] + h * st[1] + i * st[2] + j * st[3]] != 0.0f;
          row[j] = vis ? 1.0f : 0.0f;
        }
      }
  return out;
}

Tensor dropout_keep_mask(uint64_t seed, float p, int64_t B, int64_t H, int64_t Lq, int64_t Lk) {
  if (!(p >= 0.0f && p < 1.0f)) throw std::invalid_argument("dropout_keep_mask: p = " + std::to_string(p) + " outside [0, 1)");
  Tensor out = Tensor::empty({B, H, Lq, Lk});
  const uint32_t threshold = detail::dropout_threshold(p);
  const float scale = 1.0f / (1.0f - p);
  float* o = out.data();
  const int64_t rows = B * H * Lq;
#pragma omp parallel for if (rows * Lk > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r) {
    const uint32_t key = detail::dropout_row_key(seed, uint64_t(r));
    for (int64_t j = 0; j < Lk; ++j) o[r * Lk + j] = detail::dropout_draw(key, uint64_t(j)) >= threshold ? scale : 0.0f;
  }
  return out;
}

}  // namespace attn::attention
