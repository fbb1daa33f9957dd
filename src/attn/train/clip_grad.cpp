// Global-norm gradient clipping.
#include "attn/train/clip_grad.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"

namespace attn::train {

namespace {
// ||x||_p of one gradient, in double.
double tensor_norm(const Tensor& g, double p) {
  const float* x = g.data();
  const int64_t n = g.numel();
  if (std::isinf(p)) {
    double m = 0;
#pragma omp parallel for reduction(max : m) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(double(x[i])));
    // fmax drops NaN; keep PyTorch's NaN propagation
    for (int64_t i = 0; i < n; ++i)
      if (std::isnan(x[i])) return NAN;
    return m;
  }
  double s = 0;
  if (p == 2.0) {
#pragma omp parallel for simd reduction(+ : s) if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
    return std::sqrt(s);
  }
#pragma omp parallel for reduction(+ : s) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) s += std::pow(std::fabs(double(x[i])), p);
  return std::pow(s, 1.0 / p);
}
}  // namespace

double clip_grad_norm(const nn::NamedTensors& params, double max_norm, const ClipGradOptions& options) {
  const double p = options.norm_type;
  if (!(max_norm >= 0)) throw std::invalid_argument("clip_grad_norm: max_norm " + std::to_string(max_norm) + " must be >= 0");
  if (!(p > 0)) throw std::invalid_argument("clip_grad_norm: norm_type " + std::to_string(p) + " must be > 0");
  double total = 0;
  bool any = false;
  for (const auto& [name, t] : params) {
    Tensor g = t.grad();
    if (!g.defined()) continue;
    double n = tensor_norm(g, p);
    any = true;
    if (std::isinf(p) || std::isnan(n))
      total = std::isnan(total) || std::isnan(n) ? NAN : std::fmax(total, n);
    else
      total += std::pow(n, p);
  }
  if (!any) return 0.0;
  if (!std::isinf(p) && !std::isnan(total)) total = std::pow(total, 1.0 / p);
  if (options.error_if_nonfinite && !std::isfinite(total))
    throw std::runtime_error("clip_grad_norm: the total norm of the gradients is " + std::to_string(total) +
                             " (non-finite)");
  const double coef = max_norm / (total + 1e-6);
  if (!(coef < 1.0) && !std::isnan(coef)) return total;  // PyTorch clamps the factor to 1: nothing to do
  const float c = float(coef);
  for (const auto& [name, t] : params) {
    Tensor g = t.grad();
    if (!g.defined()) continue;
    float* x = g.data();
    const int64_t n = g.numel();
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t i = 0; i < n; ++i) x[i] *= c;
  }
  return total;
}

}  // namespace attn::train
