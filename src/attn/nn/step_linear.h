// x W^T for a weight that many consecutive products share: the linear maps
// of a decoder step, applied once per step of a search with the same weights.
//
// Prepared once for many searches (models/rnnsearch_search.h) or once per
// training batch (models/rnnsearch_decoder.cpp). With few rows per product (batch-1 greedy or
// beam search) the weight stays in its own row-major layout and rows_gemm
// streams it once per product; with many rows it is copied once into
// rnn_gemm's column panels, so that no product re-packs it (a BLAS call packs
// the weight on every call: ~25% of a batch-64 decoder step).
//
// Work is split in units of kUnit output columns, so that a caller can run
// several products' units in one parallel loop (see models/rnnsearch_search.cpp).
// The weight's element type is a row of step_weight_types.h (fp32 today):
// every product goes through that row's kernels.
#pragma once
#include <algorithm>
#include <cstdint>

#include "attn/nn/rnn_gemm.h"
#include "attn/nn/step_weight_types.h"
#include "attn/tensor/tensor.h"

namespace attn::nn {

class StepLinear {
public:
  static constexpr int64_t kUnit = rnn_gemm::kPanel;  // output columns per work unit

  StepLinear() = default;
  // weight [out, K], row-major fp32, prepared as `type`: read at every product
  // (F32 unpacked) or copied now (packed), so it must stay alive and unchanged
  // while this object is used.
  StepLinear(const Tensor& weight, bool packed, StepWeightType type = StepWeightType::F32);
  // The products x W[:, c0:c0+cols] (x [m, rows of W]) of a backward pass, packed
  // straight from w [rows, ld] without transposing a copy first.
  static StepLinear columns_of(const Tensor& w, int64_t c0, int64_t cols);

  int64_t out() const { return w_.out; }
  int64_t in() const { return w_.K; }
  int64_t units() const { return (w_.out + kUnit - 1) / kUnit; }
  StepWeightType type() const { return w_.type; }
  bool packed() const { return kernels_->is_packed(w_); }

  // c[i, o] = (c[i, o] if accumulate) + sum_k x[i, k] W[o, k] for rows i < x.m
  // and the outputs of units [u0, u1), i.e. o in [u0 kUnit, min(u1 kUnit, out)).
  // x: the activations [m, in()] in this weight type's form (StepInput::set
  // with type()), c with row stride ldc. No threading: callers split units.
  void apply(const StepRows& x, int64_t u0, int64_t u1, float* c, int64_t ldc, bool accumulate = false) const;
  // The same for fp32 activations a [m, K] with row stride lda, for an F32
  // weight (the backward passes' products); throws for another type, whose
  // activations are converted once per step through StepInput instead.
  void apply(int64_t m, const float* a, int64_t lda, int64_t u0, int64_t u1, float* c, int64_t ldc,
             bool accumulate = false) const;
  // The same for one unit u, written relative to the unit: c[i, j] for the
  // unit's j < unit_cols(u) outputs (a tile the caller post-processes in L1).
  void apply_unit(const StepRows& x, int64_t u, float* c, int64_t ldc) const;
  int64_t unit_cols(int64_t u) const { return std::clamp(w_.out - u * kUnit, int64_t(0), kUnit); }

private:
  StepWeightStorage w_;
  const StepWeightKernels* kernels_ = &step_weight_kernels(StepWeightType::F32);
};

// c (+)= x W^T for rows i < m over all of lin's outputs, x [m, lin.in()] fp32
// with row stride lda, converted to lin's type in `in` first; the conversion's
// rows and the product's units (one contiguous range each) split across
// threads when the product is large enough to share. c [m, lin.out()] with ldc.
void apply_all(const StepLinear& lin, StepInput& in, int64_t m, const float* x, int64_t lda, float* c, int64_t ldc,
               bool accumulate);
// The same for an F32 weight (the training loops' products): no conversion.
void apply_all(const StepLinear& lin, int64_t m, const float* a, int64_t lda, float* c, int64_t ldc, bool accumulate);

}  // namespace attn::nn
