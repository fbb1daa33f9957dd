// The row loops of the softmax kernels (softmax.cpp), compiled per instruction
// set (kernels/softmax.cpp is an ISA source, kernels/dispatch.h): the inline
// functions below call the build for cpu::isa(). Rows go parallel above
// kParallelGrain elements in all (threading.h).
//
// Legend: rows x n, row-major; mask null, or [rows, n] of 0/1 (0 = masked out).
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::kernels::softmax_rows {

ATTN_ISA_DECLARE(void forward(const float* x, const float* mask, int64_t rows, int64_t n, bool log, float* out);
                 void backward(const float* y, const float* dy, const float* mask, int64_t rows, int64_t n, bool log,
                               float* dx);)

// out = softmax (log: log-softmax) of each row of x, max-subtracted; masked
// positions and every position of a fully masked row give 0
inline void forward(const float* x, const float* mask, int64_t rows, int64_t n, bool log, float* out) {
  ATTN_ISA_CALL(forward, x, mask, rows, n, log, out);
}
// dx of each row from the forward output y and dy (softmax_lastdim_backward, kernels.h)
inline void backward(const float* y, const float* dy, const float* mask, int64_t rows, int64_t n, bool log,
                     float* dx) {
  ATTN_ISA_CALL(backward, y, dy, mask, rows, n, log, dx);
}

}  // namespace attn::kernels::softmax_rows
