// The micro-kernel and panel loops of rnn_gemm (rnn_gemm.h), compiled per
// instruction set (kernels/panel_gemm.cpp is an ISA source, kernels/dispatch.h): the
// inline functions below call the build for cpu::isa(). rnn_gemm.cpp (glue)
// packs the weights and checks the arguments.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::rnn_gemm {

constexpr int64_t kPanel = 32;  // output columns per panel (two 16-float vectors)

namespace kernels {

// A packed weight's panels as the kernels read them (a plain aggregate): panel
// (g, blk) is the K x kPanel block at data + (g * blocks + blk) * K * kPanel.
// data must be 64-byte aligned (Tensor storage is): the micro-kernel reads the
// panel rows with aligned 64-byte vector loads.
struct Panels {
  const float* data = nullptr;  // [groups, blocks, K, kPanel], 64-byte aligned
  int64_t K = 0, groups = 0, width = 0, blocks = 0;
};

// rnn_gemm::gemm_packed without its checks: C[i, g*width + k] (+)= sum_j A[i, j] B[j, g*width + k]
// for rows i < m, every group g, k in [k0, k1); k0 a multiple of kPanel, k1 <= width.
// panel_rows: one panel [K, kPanel] (64-byte aligned), its first `cols` columns into C [m, >= cols].
ATTN_ISA_DECLARE(void gemm_packed(int64_t m, const float* a, int64_t lda, const Panels& b, int64_t k0, int64_t k1,
                                  float* c, int64_t ldc, bool accumulate);
                 void panel_rows(int64_t m, const float* a, int64_t lda, int64_t K, const float* panel, int64_t cols,
                                 float* c, int64_t ldc, bool accumulate);)
inline void gemm_packed(int64_t m, const float* a, int64_t lda, const Panels& b, int64_t k0, int64_t k1, float* c,
                        int64_t ldc, bool accumulate) {
  ATTN_ISA_CALL(gemm_packed, m, a, lda, b, k0, k1, c, ldc, accumulate);
}
inline void panel_rows(int64_t m, const float* a, int64_t lda, int64_t K, const float* panel, int64_t cols, float* c,
                       int64_t ldc, bool accumulate) {
  ATTN_ISA_CALL(panel_rows, m, a, lda, K, panel, cols, c, ldc, accumulate);
}

}  // namespace kernels
}  // namespace attn::rnn_gemm
