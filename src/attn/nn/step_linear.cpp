#include "attn/nn/step_linear.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"

namespace attn::nn {

StepLinear::StepLinear(const Tensor& weight, bool packed, StepWeightType type)
    : kernels_(&step_weight_kernels(type)) {
  if (!weight.defined() || weight.dim() != 2)
    throw std::invalid_argument("StepLinear: expects a weight [out, in], got " + shape_str(weight));
  kernels_->prepare(weight.detach(), packed, w_);
}

StepLinear StepLinear::columns_of(const Tensor& w, int64_t c0, int64_t cols) {
  if (!w.defined() || w.dim() != 2 || c0 < 0 || cols < 1 || c0 + cols > w.size(1))
    throw std::invalid_argument("StepLinear::columns_of: columns [" + std::to_string(c0) + ", " +
                                std::to_string(c0 + cols) + ") of " + shape_str(w));
  StepLinear s;  // fp32 panels: a backward pass's products
  s.w_.out = cols, s.w_.K = w.size(0);
  s.w_.panels = rnn_gemm::pack(w.data() + c0, s.w_.K, cols, w.size(1));
  return s;
}

void StepLinear::apply(int64_t m, const float* a, int64_t lda, int64_t u0, int64_t u1, float* c, int64_t ldc,
                       bool accumulate) const {
  const int64_t o0 = u0 * kUnit, o1 = std::min(u1 * kUnit, w_.out);
  if (m <= 0 || o0 >= o1) return;
  kernels_->apply(w_, m, a, lda, o0, o1, c, ldc, accumulate);
}

void StepLinear::apply_unit(int64_t m, const float* a, int64_t lda, int64_t u, float* c, int64_t ldc) const {
  const int64_t cols = unit_cols(u);
  if (m <= 0 || cols <= 0) return;
  kernels_->apply_unit(w_, m, a, lda, u, cols, c, ldc);
}

void apply_all(const StepLinear& lin, int64_t m, const float* a, int64_t lda, float* c, int64_t ldc, bool accumulate) {
  const int64_t U = lin.units();
  const bool par = m > 1 && m * lin.out() * lin.in() > kParallelGrain * 32;
#pragma omp parallel for schedule(static) if (par)
  for (int64_t u = 0; u < U; ++u) lin.apply(m, a, lda, u, u + 1, c, ldc, accumulate);
}

}  // namespace attn::nn
