// Packed-weight step GEMM (see rnn_gemm.h): the packing and the argument
// checks. The micro-kernel and the panel loops are kernels/panel_gemm.cpp, an
// ISA source compiled per instruction set.
#include "attn/nn/rnn_gemm.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace attn::rnn_gemm {
namespace {

void check_slice(const PackedWeight& b, int64_t k0, int64_t k1) {
  if (k0 < 0 || k0 % kPanel != 0 || k1 < k0 || k1 > b.width)
    throw std::invalid_argument("gemm_packed: column slice [" + std::to_string(k0) + ", " + std::to_string(k1) +
                                ") of width " + std::to_string(b.width) + " (start must be a multiple of 32)");
}

PackedWeight make(int64_t K, int64_t groups, int64_t width) {
  PackedWeight p;
  p.K = K, p.groups = groups, p.width = width, p.blocks = (width + kPanel - 1) / kPanel;
  p.data = Tensor::empty(Shape{groups, p.blocks, K, kPanel});
  return p;
}

}  // namespace

PackedWeight pack_transposed(const float* w, int64_t K, int64_t groups, int64_t width) {
  PackedWeight p = make(K, groups, width);
#pragma omp parallel for collapse(2) if (groups * width * K > (int64_t(1) << 16))
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t blk = 0; blk < p.blocks; ++blk) {
      float* dst = const_cast<float*>(p.panel(g, blk));
      const int64_t c0 = blk * kPanel, cols = std::min(kPanel, width - c0);
      // dst[k][j] = B[k][g*width + c0 + j] = W[g*width + c0 + j][k]: a transpose,
      // in tiles of 16 k so that both the 32 source rows and the 16 panel rows
      // of a tile stay in L1
      for (int64_t kt = 0; kt < K; kt += 16) {
        const int64_t kn = std::min<int64_t>(16, K - kt);
        for (int64_t j = 0; j < cols; ++j) {
          const float* src = w + (g * width + c0 + j) * K + kt;
          for (int64_t k = 0; k < kn; ++k) dst[(kt + k) * kPanel + j] = src[k];
        }
      }
      for (int64_t j = cols; j < kPanel; ++j)
        for (int64_t k = 0; k < K; ++k) dst[k * kPanel + j] = 0.0f;
    }
  return p;
}

PackedWeight pack(const float* w, int64_t K, int64_t width, int64_t ld) {
  PackedWeight p = make(K, 1, width);
  if (ld == 0) ld = width;
#pragma omp parallel for if (width * K > (int64_t(1) << 16))
  for (int64_t blk = 0; blk < p.blocks; ++blk) {
    float* dst = const_cast<float*>(p.panel(0, blk));
    const int64_t c0 = blk * kPanel, cols = std::min(kPanel, width - c0);
    for (int64_t k = 0; k < K; ++k) {
      std::memcpy(dst + k * kPanel, w + k * ld + c0, size_t(cols) * sizeof(float));
      std::memset(dst + k * kPanel + cols, 0, size_t(kPanel - cols) * sizeof(float));
    }
  }
  return p;
}

namespace {

// the kernels' view of a packed weight
kernels::Panels panels(const PackedWeight& b) {
  kernels::Panels p;
  p.data = b.data.defined() ? b.data.data() : nullptr, p.K = b.K, p.groups = b.groups, p.width = b.width, p.blocks = b.blocks;
  return p;
}

}  // namespace

void gemm_packed(int64_t m, const float* a, int64_t lda, const PackedWeight& b, int64_t k0, int64_t k1, float* c,
                 int64_t ldc, bool accumulate) {
  check_slice(b, k0, k1);
  kernels::gemm_packed(m, a, lda, panels(b), k0, k1, c, ldc, accumulate);
}

void gemm_panel(int64_t m, const float* a, int64_t lda, const PackedWeight& b, int64_t group, int64_t block, float* c,
                int64_t ldc, bool accumulate) {
  if (group < 0 || group >= b.groups || block < 0 || block >= b.blocks)
    throw std::invalid_argument("gemm_panel: panel (" + std::to_string(group) + ", " + std::to_string(block) +
                                ") outside " + std::to_string(b.groups) + " x " + std::to_string(b.blocks));
  kernels::panel_rows(m, a, lda, b.K, b.panel(group, block), std::min(kPanel, b.width - block * kPanel), c, ldc,
                      accumulate);
}

}  // namespace attn::rnn_gemm
