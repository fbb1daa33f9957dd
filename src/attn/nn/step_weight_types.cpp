#include "attn/nn/step_weight_types.h"

#include <stdexcept>

#include "attn/kernels/rows_gemm.h"

namespace attn::nn {
namespace {

void prepare_f32(const Tensor& weight, bool packed, StepWeightStorage& s) {
  s.type = StepWeightType::F32;
  s.out = weight.size(0), s.K = weight.size(1);
  s.rows = weight;
  if (packed) s.panels = rnn_gemm::pack_transposed(weight.data(), s.K, 1, s.out);
}

bool is_packed_f32(const StepWeightStorage& s) { return s.panels.data.defined(); }

void apply_f32(const StepWeightStorage& s, int64_t m, const float* a, int64_t lda, int64_t o0, int64_t o1, float* c,
               int64_t ldc, bool accumulate) {
  if (is_packed_f32(s))
    rnn_gemm::gemm_packed(m, a, lda, s.panels, o0, o1, c, ldc, accumulate);
  else
    rows_gemm::gemm_wt(m, s.K, a, lda, s.rows.data(), s.K, o0, o1, c, ldc, accumulate);
}

void apply_unit_f32(const StepWeightStorage& s, int64_t m, const float* a, int64_t lda, int64_t u, int64_t cols,
                    float* c, int64_t ldc) {
  if (is_packed_f32(s))
    rnn_gemm::gemm_panel(m, a, lda, s.panels, 0, u, c, ldc, false);
  else
    rows_gemm::gemm_wt(m, s.K, a, lda, s.rows.data() + u * rnn_gemm::kPanel * s.K, s.K, 0, cols, c, ldc, false);
}

// The table: one row per StepWeightType, in the enum's order.
const StepWeightKernels kTable[] = {
    {"f32", prepare_f32, is_packed_f32, apply_f32, apply_unit_f32},
};

}  // namespace

const StepWeightKernels& step_weight_kernels(StepWeightType type) {
  const size_t i = size_t(type);
  if (i >= sizeof kTable / sizeof kTable[0]) throw std::logic_error("step_weight_kernels: no row for this type");
  return kTable[i];
}

StepWeightType step_weight_type(const std::string& name) {
  std::string known;
  for (size_t i = 0; i < sizeof kTable / sizeof kTable[0]; ++i) {
    if (name == kTable[i].name) return StepWeightType(i);
    known += (known.empty() ? "" : ", ") + std::string(kTable[i].name);
  }
  throw std::invalid_argument("unknown weight type '" + name + "' (known: " + known + ")");
}

}  // namespace attn::nn
