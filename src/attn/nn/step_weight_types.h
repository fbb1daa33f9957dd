// The element types a prepared step weight (step_linear.h) can hold, as one
// table: each type is a row that says how a weight [out, K] given in fp32 is
// stored and how the products x W^T read it. fp32 is the only row today; a
// reduced-precision type (int8 with per-row scales, bf16) is a new row with
// its own storage fields and kernels, not a second StepLinear or a second
// search step.
#pragma once
#include <cstdint>
#include <string>

#include "attn/nn/rnn_gemm.h"
#include "attn/tensor/tensor.h"

namespace attn::nn {

enum class StepWeightType { F32 };

// A prepared weight [out, K] in the storage of its type (the fields a type
// does not use stay empty).
struct StepWeightStorage {
  StepWeightType type = StepWeightType::F32;
  int64_t out = 0, K = 0;
  Tensor rows;                      // F32 row-major [out, K]: read in place for a few rows per product
  rnn_gemm::PackedWeight panels;    // F32 column panels: copied once, for many rows per product
};

// One row of the table.
struct StepWeightKernels {
  const char* name;  // as configs and messages spell it ("f32")
  // weight [out, K] (fp32, kept alive by the storage) -> storage; `packed`:
  // the layout for many rows per product
  void (*prepare)(const Tensor& weight, bool packed, StepWeightStorage& s);
  bool (*is_packed)(const StepWeightStorage& s);
  // c[i, o] (+)= sum_k a[i, k] W[o, k] for rows i < m, outputs o in [o0, o1);
  // a [m, K] with row stride lda, c with row stride ldc
  void (*apply)(const StepWeightStorage& s, int64_t m, const float* a, int64_t lda, int64_t o0, int64_t o1,
                float* c, int64_t ldc, bool accumulate);
  // the outputs of unit u (columns [u kUnit, u kUnit + cols)) written from c's
  // column 0 (a tile the caller post-processes in L1)
  void (*apply_unit)(const StepWeightStorage& s, int64_t m, const float* a, int64_t lda, int64_t u, int64_t cols,
                     float* c, int64_t ldc);
};

const StepWeightKernels& step_weight_kernels(StepWeightType type);
// The type a name spells ("f32"); std::invalid_argument naming the known ones otherwise.
StepWeightType step_weight_type(const std::string& name);

}  // namespace attn::nn
