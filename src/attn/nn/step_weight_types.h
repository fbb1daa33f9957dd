// The element types a prepared step weight (step_linear.h) can hold, as one
// table: each type is a row that says how a weight [out, K] given in fp32 is
// stored and how the products x W^T read it: fp32 (row-major for a few rows,
// column panels for many), int8 (per-output-row scales, activations quantised
// per row at every product) and bf16 (products accumulated in fp32), the
// latter two in kernels/quant_gemm.h's panels for any number of rows. A type
// is a row here, not a second StepLinear or a second search step.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attn/nn/rnn_gemm.h"
#include "attn/nn/step_weight_type.h"
#include "attn/tensor/tensor.h"

namespace attn::nn {


// A prepared weight [out, K] in the storage of its type (the fields a type
// does not use stay empty).
struct StepWeightStorage {
  StepWeightType type = StepWeightType::F32;
  int64_t out = 0, K = 0;
  Tensor rows;                      // F32 row-major [out, K]: read in place for a few rows per product
  rnn_gemm::PackedWeight panels;    // F32 column panels: copied once, for many rows per product
  std::shared_ptr<uint8_t> bytes;   // I8 / BF16 panels (quant_gemm.h's layouts), 64-byte aligned
  std::vector<float> scale;         // I8: s_w per output, [units * 32] (0 past out)
  std::vector<int32_t> comp;        // I8: 128 sum_k w_q per output, [units * 32]
};

// The activations x [m, K] of a step's products, in the form the weight type's
// kernels read (a view: StepInput owns the converted rows): fp32 as given,
// int8 quantised per row (+128, quant_gemm.h), bf16 rounded.
struct StepRows {
  StepWeightType type = StepWeightType::F32;
  int64_t m = 0, K = 0;
  const float* f32 = nullptr;    // F32: x itself, row stride lda
  int64_t lda = 0;
  const uint8_t* q = nullptr;    // I8: [m, ldq] quantised rows, their scales
  const float* scale = nullptr;
  int64_t ldq = 0;
  const uint16_t* bf = nullptr;  // BF16: [m, ldb]
  int64_t ldb = 0;
  // rows [i0, i0 + n) of this view
  StepRows rows(int64_t i0, int64_t n) const;
};

// The owner of converted activations: set() once per step, before the units of
// the products that read x are split across threads (converting per unit
// would cost about as much as an int8 product); then view() for every product.
// F32 keeps only x's address (x must outlive the products). Buffers are reused
// across steps.
class StepInput {
public:
  // x [m, K] with row stride lda, for products of weights of type `type`
  const StepRows& set(StepWeightType type, int64_t m, int64_t K, const float* x, int64_t lda);
  const StepRows& view() const { return v_; }
  // set() in two parts, for a parallel region: reserve() by one thread, then
  // convert(i0, i1) of disjoint row ranges by any
  void reserve(StepWeightType type, int64_t m, int64_t K, const float* x, int64_t lda);
  void convert(int64_t i0, int64_t i1);

private:
  const float* x_ = nullptr;
  int64_t lda_ = 0;
  StepRows v_;
  std::vector<uint8_t> q_;
  std::vector<float> scale_;
  std::vector<uint16_t> bf_;
};

// Inside a parallel region, called by every thread alike: x in `type`'s form
// for the products that follow: fp32 a view of x; int8 / bf16 converted into
// `in`, its rows split across the threads (barriers before and after).
StepRows shared_rows(StepInput& in, StepWeightType type, int64_t m, int64_t K, const float* x, int64_t lda);

// One row of the table.
struct StepWeightKernels {
  const char* name;  // as options (--compute) and messages spell it: "fp32", "int8", "bf16"
  // weight [out, K] (fp32, kept alive by the storage) -> storage; `packed`:
  // the layout for many rows per product
  void (*prepare)(const Tensor& weight, bool packed, StepWeightStorage& s);
  bool (*is_packed)(const StepWeightStorage& s);
  // c[i, o] (+)= sum_k x[i, k] W[o, k] for rows i < x.m, outputs o in [o0, o1)
  // (o0 a multiple of the unit); x in this type's form (StepRows), c with row stride ldc
  void (*apply)(const StepWeightStorage& s, const StepRows& x, int64_t o0, int64_t o1, float* c, int64_t ldc,
                bool accumulate);
  // the outputs of unit u (columns [u kUnit, u kUnit + cols)) written from c's
  // column 0 (a tile the caller post-processes in L1)
  void (*apply_unit)(const StepWeightStorage& s, const StepRows& x, int64_t u, int64_t cols, float* c, int64_t ldc);
};

const StepWeightKernels& step_weight_kernels(StepWeightType type);
// The type a name spells ("fp32", "int8", "bf16"); std::invalid_argument naming the known ones otherwise.
StepWeightType step_weight_type(const std::string& name);

}  // namespace attn::nn
