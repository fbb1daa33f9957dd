#include "attn/nn/step_linear.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "attn/nn/rows_gemm.h"

namespace attn::nn {

StepLinear::StepLinear(const Tensor& weight, bool packed) {
  if (!weight.defined() || weight.dim() != 2)
    throw std::invalid_argument("StepLinear: expects a weight [out, in], got " + shape_str(weight));
  weight_ = weight.detach();
  out_ = weight.size(0), K_ = weight.size(1);
  if (packed) packed_ = rnn_gemm::pack_transposed(weight_.data(), K_, 1, out_);
}

StepLinear StepLinear::columns_of(const Tensor& w, int64_t c0, int64_t cols) {
  if (!w.defined() || w.dim() != 2 || c0 < 0 || cols < 1 || c0 + cols > w.size(1))
    throw std::invalid_argument("StepLinear::columns_of: columns [" + std::to_string(c0) + ", " +
                                std::to_string(c0 + cols) + ") of " + shape_str(w));
  StepLinear s;
  s.out_ = cols, s.K_ = w.size(0);
  s.packed_ = rnn_gemm::pack(w.data() + c0, s.K_, cols, w.size(1));
  return s;
}

void StepLinear::apply(int64_t m, const float* a, int64_t lda, int64_t u0, int64_t u1, float* c, int64_t ldc,
                       bool accumulate) const {
  const int64_t o0 = u0 * kUnit, o1 = std::min(u1 * kUnit, out_);
  if (m <= 0 || o0 >= o1) return;
  if (packed())
    rnn_gemm::gemm_packed(m, a, lda, packed_, o0, o1, c, ldc, accumulate);
  else
    rows_gemm::gemm_wt(m, K_, a, lda, weight_.data(), K_, o0, o1, c, ldc, accumulate);
}

void StepLinear::apply_unit(int64_t m, const float* a, int64_t lda, int64_t u, float* c, int64_t ldc) const {
  const int64_t cols = unit_cols(u);
  if (m <= 0 || cols <= 0) return;
  if (packed())
    rnn_gemm::gemm_panel(m, a, lda, packed_, 0, u, c, ldc, false);
  else
    rows_gemm::gemm_wt(m, K_, a, lda, weight_.data() + u * kUnit * K_, K_, 0, cols, c, ldc, false);
}

}  // namespace attn::nn
