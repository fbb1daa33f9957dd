// Adam and AdamW (torch.optim.Adam / AdamW, single-tensor path).
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"
#include "attn/train/optim.h"

namespace attn::train {

namespace {
AdamOptions from_adamw(const AdamWOptions& o) {
  AdamOptions a;
  a.lr = o.lr;
  a.beta1 = o.beta1;
  a.beta2 = o.beta2;
  a.eps = o.eps;
  a.weight_decay = o.weight_decay;
  return a;
}
}  // namespace

Adam::Adam(nn::NamedTensors params, const AdamOptions& options) : Adam(std::move(params), options, false) {}

Adam::Adam(nn::NamedTensors params, const AdamOptions& options, bool decoupled)
    : Optimizer(std::move(params)), opt_(options), decoupled_(decoupled) {
  const char* who = decoupled ? "AdamW: " : "Adam: ";
  auto bad = [&](const std::string& what) { throw std::invalid_argument(who + what); };
  if (!(opt_.beta1 >= 0 && opt_.beta1 < 1)) bad("beta1 " + std::to_string(opt_.beta1) + " must be in [0, 1)");
  if (!(opt_.beta2 >= 0 && opt_.beta2 < 1)) bad("beta2 " + std::to_string(opt_.beta2) + " must be in [0, 1)");
  if (!(opt_.eps >= 0)) bad("eps " + std::to_string(opt_.eps) + " must be >= 0");
  if (!(opt_.weight_decay >= 0)) bad("weight_decay " + std::to_string(opt_.weight_decay) + " must be >= 0");
  set_lr(opt_.lr);
  add_buffer_kind("exp_avg");
  add_buffer_kind("exp_avg_sq");
}

AdamW::AdamW(nn::NamedTensors params, const AdamWOptions& options) : Adam(std::move(params), from_adamw(options), true) {}

void Adam::update(size_t i, Tensor& param, const Tensor& grad) {
  float* p = param.data();
  const float* g = grad.data();
  float* m = buffers_[0][i].data();
  float* v = buffers_[1][i].data();
  const int64_t n = param.numel();
  // Scalars in double as torch computes them in Python, then used as float.
  const double t = double(param_steps_[i]);
  const float step_size = float(lr_ / (1.0 - std::pow(opt_.beta1, t)));
  const float bc2_sqrt = float(std::sqrt(1.0 - std::pow(opt_.beta2, t)));
  const float b1 = float(opt_.beta1), one_minus_b1 = float(1.0 - opt_.beta1);
  const float b2 = float(opt_.beta2), one_minus_b2 = float(1.0 - opt_.beta2);
  const float eps = float(opt_.eps);
  const float l2 = decoupled_ ? 0.0f : float(opt_.weight_decay);
  const float decay = decoupled_ ? float(1.0 - lr_ * opt_.weight_decay) : 1.0f;
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t k = 0; k < n; ++k) {
    float gk = g[k] + l2 * p[k];           // Adam: coupled L2
    float pk = p[k] * decay;                // AdamW: decoupled decay
    float mk = m[k] * b1 + one_minus_b1 * gk;
    float vk = v[k] * b2 + one_minus_b2 * gk * gk;
    m[k] = mk;
    v[k] = vk;
    float denom = std::sqrt(vk) / bc2_sqrt + eps;
    p[k] = pk + (-step_size) * mk / denom;
  }
}

}  // namespace attn::train
