// The row kernels of output_cross_entropy and log_softmax_rows (output_loss.h),
// compiled per instruction set (kernels/output_loss.cpp is an ISA source,
// kernels/dispatch.h): the inline functions below call the build for cpu::isa().
//
// Legend: n rows of a logits block, V vocabulary size.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::models::output_loss_kernels {

// One block of the fused loss (a plain aggregate: a kernel argument).
struct LossBlock {
  float* logits = nullptr;          // [n, V] in: x W^T + b; out: p, or dlogits when grad
  int64_t n = 0, V = 0;
  const float* targets = nullptr;   // the op's targets (float-encoded ids), indexed by rows[i]
  const int64_t* rows = nullptr;    // [n] the row of targets each logits row belongs to
  float eps = 0;                    // label smoothing
  float inv_count = 0;              // 1 / (rows that count in the whole batch)
  bool grad = false;                // write dlogits = (p - (1-eps) onehot(t) - eps/V) / count
};

// Softmax of every row of b.logits in place and, when b.grad, d loss / d logits
// in place of p. Returns sum over the rows of (1-eps) (-log p_t) + eps mean_c (-log p_c).
ATTN_ISA_DECLARE(double loss_block(const LossBlock& b);
                 void add_column_sums(const float* rows, int64_t n, int64_t V, float* sums);
                 void log_softmax_rows(const float* logits, int64_t N, int64_t V, float* out);)
inline double loss_block(const LossBlock& b) { ATTN_ISA_CALL(loss_block, b); }

// sums [V] += sum over i < n of rows [n, V] (the bias gradient)
inline void add_column_sums(const float* rows, int64_t n, int64_t V, float* sums) {
  ATTN_ISA_CALL(add_column_sums, rows, n, V, sums);
}

// out [N, V] = logits [N, V] - log sum exp of each row (vocab_topk.h's lse)
inline void log_softmax_rows(const float* logits, int64_t N, int64_t V, float* out) {
  ATTN_ISA_CALL(log_softmax_rows, logits, N, V, out);
}

}  // namespace attn::models::output_loss_kernels
