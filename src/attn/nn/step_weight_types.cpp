#include "attn/nn/step_weight_types.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <new>
#include <stdexcept>

#include "attn/cpu/isa.h"
#include "attn/kernels/quant_gemm.h"
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

void apply_f32(const StepWeightStorage& s, const StepRows& x, int64_t o0, int64_t o1, float* c, int64_t ldc,
               bool accumulate) {
  const int64_t m = x.m, lda = x.lda;
  const float* a = x.f32;
  if (is_packed_f32(s))
    rnn_gemm::gemm_packed(m, a, lda, s.panels, o0, o1, c, ldc, accumulate);
  else
    rows_gemm::gemm_wt(m, s.K, a, lda, s.rows.data(), s.K, o0, o1, c, ldc, accumulate);
}

void apply_unit_f32(const StepWeightStorage& s, const StepRows& x, int64_t u, int64_t cols, float* c, int64_t ldc) {
  const int64_t m = x.m, lda = x.lda;
  const float* a = x.f32;
  if (is_packed_f32(s))
    rnn_gemm::gemm_panel(m, a, lda, s.panels, 0, u, c, ldc, false);
  else
    rows_gemm::gemm_wt(m, s.K, a, lda, s.rows.data() + u * rnn_gemm::kPanel * s.K, s.K, 0, cols, c, ldc, false);
}

// --- int8 and bf16: quant_gemm.h's panels ---
namespace qk = quant::kernels;
static_assert(qk::kPanel == rnn_gemm::kPanel, "a StepLinear unit is one panel");

std::shared_ptr<uint8_t> aligned_bytes(size_t n) {
  void* p = std::aligned_alloc(64, std::max<size_t>(64, (n + 63) / 64 * 64));
  if (!p) throw std::bad_alloc();
  std::fill_n(static_cast<uint8_t*>(p), n, uint8_t(0));
  return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), [](uint8_t* q) { std::free(q); });
}

int64_t panels_of(int64_t out) { return (out + qk::kPanel - 1) / qk::kPanel; }

void prepare_i8(const Tensor& weight, bool, StepWeightStorage& s) {
  s.type = StepWeightType::I8;
  s.out = weight.size(0), s.K = weight.size(1);
  const int64_t K4 = (s.K + 3) / 4, P = panels_of(s.out);
  s.bytes = aligned_bytes(size_t(P * K4 * qk::kPanel * 4));
  s.scale.assign(size_t(P * qk::kPanel), 0.0f);
  s.comp.assign(size_t(P * qk::kPanel), 0);
  auto* data = reinterpret_cast<int8_t*>(s.bytes.get());
  for (int64_t o = 0; o < s.out; ++o) {
    const float* w = weight.data() + o * s.K;
    float amax = 0.0f;
    for (int64_t k = 0; k < s.K; ++k) amax = std::max(amax, std::fabs(w[k]));
    if (!std::isfinite(amax)) throw std::invalid_argument("int8 weights: output row " + std::to_string(o) + " is not finite");
    const float inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    int32_t sum = 0;
    int8_t* panel = data + (o / qk::kPanel) * K4 * qk::kPanel * 4;
    for (int64_t k = 0; k < s.K; ++k) {
      const int8_t q = int8_t(std::nearbyint(w[k] * inv));
      panel[(k / 4) * qk::kPanel * 4 + (o % qk::kPanel) * 4 + k % 4] = q;
      sum += q;
    }
    s.scale[size_t(o)] = amax / 127.0f;
    s.comp[size_t(o)] = 128 * sum;
  }
}

void prepare_bf16(const Tensor& weight, bool, StepWeightStorage& s) {
  s.type = StepWeightType::BF16;
  s.out = weight.size(0), s.K = weight.size(1);
  const int64_t K2 = (s.K + 1) / 2, P = panels_of(s.out);
  s.bytes = aligned_bytes(size_t(P * K2 * qk::kPanel * 2) * sizeof(uint16_t));
  auto* data = reinterpret_cast<uint16_t*>(s.bytes.get());
  for (int64_t o = 0; o < s.out; ++o) {
    uint16_t* panel = data + (o / qk::kPanel) * K2 * qk::kPanel * 2;
    for (int64_t k = 0; k < s.K; ++k)
      panel[(k / 2) * qk::kPanel * 2 + (o % qk::kPanel) * 2 + k % 2] = qk::bf16_of(weight.data()[o * s.K + k]);
  }
}

bool is_packed_quant(const StepWeightStorage&) { return true; }

qk::S8Panels s8_view(const StepWeightStorage& s) {
  return {reinterpret_cast<const int8_t*>(s.bytes.get()), s.scale.data(), s.comp.data(), (s.K + 3) / 4, s.out};
}
qk::Bf16Panels bf16_view(const StepWeightStorage& s) {
  return {reinterpret_cast<const uint16_t*>(s.bytes.get()), (s.K + 1) / 2, s.out};
}

void apply_i8(const StepWeightStorage& s, const StepRows& x, int64_t o0, int64_t o1, float* c, int64_t ldc,
              bool accumulate) {
  qk::gemm_s8(x.m, x.q, x.ldq, x.scale, s8_view(s), o0 / qk::kPanel, panels_of(o1), c + o0, ldc, accumulate,
              cpu::native_int8());
}

void apply_unit_i8(const StepWeightStorage& s, const StepRows& x, int64_t u, int64_t, float* c, int64_t ldc) {
  qk::gemm_s8(x.m, x.q, x.ldq, x.scale, s8_view(s), u, u + 1, c, ldc, false, cpu::native_int8());
}

void apply_bf16(const StepWeightStorage& s, const StepRows& x, int64_t o0, int64_t o1, float* c, int64_t ldc,
                bool accumulate) {
  qk::gemm_bf16(x.m, x.bf, x.ldb, bf16_view(s), o0 / qk::kPanel, panels_of(o1), c + o0, ldc, accumulate,
                cpu::native_bf16());
}

void apply_unit_bf16(const StepWeightStorage& s, const StepRows& x, int64_t u, int64_t, float* c, int64_t ldc) {
  qk::gemm_bf16(x.m, x.bf, x.ldb, bf16_view(s), u, u + 1, c, ldc, false, cpu::native_bf16());
}

// The table: one row per StepWeightType, in the enum's order.
const StepWeightKernels kTable[] = {
    {"fp32", prepare_f32, is_packed_f32, apply_f32, apply_unit_f32},
    {"int8", prepare_i8, is_packed_quant, apply_i8, apply_unit_i8},
    {"bf16", prepare_bf16, is_packed_quant, apply_bf16, apply_unit_bf16},
};

}  // namespace

StepRows StepRows::rows(int64_t i0, int64_t n) const {
  StepRows r = *this;
  r.m = n;
  if (f32) r.f32 = f32 + i0 * lda;
  if (q) r.q = q + i0 * ldq, r.scale = scale + i0;
  if (bf) r.bf = bf + i0 * ldb;
  return r;
}

void StepInput::reserve(StepWeightType type, int64_t m, int64_t K, const float* x, int64_t lda) {
  v_ = StepRows{};
  v_.type = type, v_.m = m, v_.K = K;
  x_ = x, lda_ = lda;
  switch (type) {
    case StepWeightType::F32:
      v_.f32 = x, v_.lda = lda;
      break;
    case StepWeightType::I8:
      v_.ldq = (K + 3) / 4 * 4;
      if (q_.size() < size_t(m * v_.ldq)) q_.resize(size_t(m * v_.ldq));
      if (scale_.size() < size_t(m)) scale_.resize(size_t(m));
      v_.q = q_.data(), v_.scale = scale_.data();
      break;
    case StepWeightType::BF16:
      v_.ldb = (K + 1) / 2 * 2;
      if (bf_.size() < size_t(m * v_.ldb)) bf_.resize(size_t(m * v_.ldb));
      v_.bf = bf_.data();
      break;
  }
}

void StepInput::convert(int64_t i0, int64_t i1) {
  if (i1 <= i0) return;
  const float* x = x_ + i0 * lda_;
  if (v_.type == StepWeightType::I8)
    qk::quantize_rows(i1 - i0, v_.K, x, lda_, q_.data() + i0 * v_.ldq, v_.ldq, scale_.data() + i0);
  else if (v_.type == StepWeightType::BF16)
    qk::to_bf16_rows(i1 - i0, v_.K, x, lda_, bf_.data() + i0 * v_.ldb, v_.ldb);
}

const StepRows& StepInput::set(StepWeightType type, int64_t m, int64_t K, const float* x, int64_t lda) {
  reserve(type, m, K, x, lda);
  convert(0, m);
  return v_;
}

StepRows shared_rows(StepInput& in, StepWeightType type, int64_t m, int64_t K, const float* x, int64_t lda) {
  if (type == StepWeightType::F32) {
    StepRows r;
    r.m = m, r.K = K, r.f32 = x, r.lda = lda;
    return r;
  }
#pragma omp single
  in.reserve(type, m, K, x, lda);
  constexpr int64_t kRows = 8;
#pragma omp for schedule(static)
  for (int64_t i0 = 0; i0 < m; i0 += kRows) in.convert(i0, std::min(m, i0 + kRows));
  return in.view();
}

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
