// Tile epilogues (see kernels/tile_epilogue.h). An ISA source: compiled once per
// instruction set.
#include "attn/kernels/tile_epilogue.h"

#include "attn/simd/vec.h"  // ATTN_SIMD_ISA

namespace attn::kernels::epilogue::ATTN_SIMD_ISA {

void bias_into(Into into, const float* tile, int64_t ldt, const float* bias, int64_t rows, int64_t cols, float* c,
               int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* t = tile + i * ldt;
    float* y = c + i * ldc;
    switch (into) {
      case Into::Set:
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) y[j] = t[j] + bias[j];
        break;
      case Into::Relu:
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) {
          const float v = t[j] + bias[j];
          y[j] = v > 0.0f ? v : 0.0f;
        }
        break;
      case Into::Residual:
#pragma omp simd
        for (int64_t j = 0; j < cols; ++j) y[j] += t[j] + bias[j];
        break;
    }
  }
}

}  // namespace attn::kernels::epilogue::ATTN_SIMD_ISA
