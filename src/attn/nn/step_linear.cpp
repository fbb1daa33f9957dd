#include "attn/nn/step_linear.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <omp.h>

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

void StepLinear::apply(const StepRows& x, int64_t u0, int64_t u1, float* c, int64_t ldc, bool accumulate) const {
  const int64_t o0 = u0 * kUnit, o1 = std::min(u1 * kUnit, w_.out);
  if (x.m <= 0 || o0 >= o1) return;
  kernels_->apply(w_, x, o0, o1, c, ldc, accumulate);
}

void StepLinear::apply(int64_t m, const float* a, int64_t lda, int64_t u0, int64_t u1, float* c, int64_t ldc,
                       bool accumulate) const {
  if (w_.type != StepWeightType::F32)
    throw std::logic_error(std::string("StepLinear::apply: fp32 rows for a weight of type ") + kernels_->name +
                           " (convert them once through StepInput)");
  StepRows x;
  x.m = m, x.K = w_.K, x.f32 = a, x.lda = lda;
  apply(x, u0, u1, c, ldc, accumulate);
}

void StepLinear::apply_unit(const StepRows& x, int64_t u, float* c, int64_t ldc) const {
  const int64_t cols = unit_cols(u);
  if (x.m <= 0 || cols <= 0) return;
  kernels_->apply_unit(w_, x, u, cols, c, ldc);
}

namespace {
bool worth_sharing(const StepLinear& lin, int64_t m) { return m > 1 && m * lin.out() * lin.in() > kParallelGrain * 32; }
}  // namespace

void apply_all(const StepLinear& lin, int64_t m, const float* a, int64_t lda, float* c, int64_t ldc, bool accumulate) {
  const int64_t U = lin.units();
#pragma omp parallel for schedule(static) if (worth_sharing(lin, m))
  for (int64_t u = 0; u < U; ++u) lin.apply(m, a, lda, u, u + 1, c, ldc, accumulate);
}

void apply_all(const StepLinear& lin, StepInput& in, int64_t m, const float* x, int64_t lda, float* c, int64_t ldc,
               bool accumulate) {
  const int64_t U = lin.units();
#pragma omp parallel if (worth_sharing(lin, m))
  {
    const StepRows rows = shared_rows(in, lin.type(), m, lin.in(), x, lda);
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    lin.apply(rows, U * t / T, U * (t + 1) / T, c, ldc, accumulate);
  }
}

}  // namespace attn::nn
