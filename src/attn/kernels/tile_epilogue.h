// The last pass of a product computed one column tile at a time (a search
// step's StepLinear units, models/transformer/transformer_search.cpp): the
// tile's x W^T plus the bias, into the output as the layer needs it. An ISA
// source (kernels/dispatch.h): the step's own code is portable x86-64, where
// this loop ran 4 floats wide (7% of a batch-64 greedy search, perf 2026-11-28).
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::kernels::epilogue {

enum class Into {
  Set,       // c = tile + bias
  Relu,      // c = max(tile + bias, 0)
  Residual,  // c += tile + bias (the residual stream: x + (x W^T + b), the layers' order)
};

ATTN_ISA_DECLARE(void bias_into(Into into, const float* tile, int64_t ldt, const float* bias, int64_t rows,
                                int64_t cols, float* c, int64_t ldc);)

// c [rows, cols] (row stride ldc) from tile [rows, cols] (row stride ldt) and
// bias [cols] as `into` says. No threading.
inline void bias_into(Into into, const float* tile, int64_t ldt, const float* bias, int64_t rows, int64_t cols,
                      float* c, int64_t ldc) {
  ATTN_ISA_CALL(bias_into, into, tile, ldt, bias, rows, cols, c, ldc);
}

}  // namespace attn::kernels::epilogue
