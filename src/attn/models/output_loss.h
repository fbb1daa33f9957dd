// The vocabulary projection and the cross-entropy loss as one fused op, for
// the translation models' training loss.
//
// Legend: N target positions (all steps of a batch), R readout size, V
// vocabulary size.
//
//   logits = x W^T + b                                   [N, V]
//   loss   = mean over rows with target != ignore_index of
//            (1 - eps) (-log p_t) + eps mean_c (-log p_c),  p = softmax(logits)
// i.e. cross_entropy(linear(x, W, b), targets, {ignore_index, eps}) of
// autograd/ops.h, computed in blocks of the rows that count (padding rows,
// target == ignore_index, are skipped) so that no [N, V] tensor outlives a
// block: each block's logits go through a vectorised log-softmax and, when a
// gradient is wanted, its dlogits = (p - q) / count (q the smoothed one-hot)
// goes straight into dx = dlogits W, dW += dlogits^T x and db += column sums. The backward only scales these by the incoming gradient
// (the loss is linear in it). So the gradient work happens in the forward
// call; without grad mode only the loss is computed.
#pragma once
#include "attn/autograd/ops.h"

namespace attn::models {

// The rows of one block by default: as many as a [rows, V] logits block of
// kOutputBlockBytes holds (at least kOutputBlockMinRows). Fewer, larger blocks
// pass over dW [V, R] fewer times (each block adds its dlogits^T x into it)
// and give its GEMM a longer inner dimension: luong's 960 x 512 x 8000
// forward + backward took 57.4 ms in one block against 66.4 ms in blocks of
// 128 rows (BENCHMARKS.md, "Luong speed").
constexpr int64_t kOutputBlockBytes = int64_t(32) << 20;
constexpr int64_t kOutputBlockMinRows = 128;
int64_t output_block_rows(int64_t V);

// x [N, R], W [V, R], b [V] or undefined, targets [N] (float-encoded ids)
// -> scalar. Differentiable op "output_cross_entropy" (x, W, b). block_rows:
// the rows per block (0: output_block_rows(V)); the result does not depend on
// it beyond rounding. Throws std::invalid_argument naming the shapes, or a
// target outside [0, V).
Tensor output_cross_entropy(const Tensor& x, const Tensor& W, const Tensor& b, const Tensor& targets,
                            const CrossEntropyOptions& options = {}, int64_t block_rows = 0);

// Log-softmax over the last axis of logits [N, V] with the vectorised
// kernel of the op above; no autograd (decoding's step()).
Tensor log_softmax_rows(const Tensor& logits);

}  // namespace attn::models
