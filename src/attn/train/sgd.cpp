// SGD with momentum, dampening, Nesterov and L2 weight decay (torch.optim.SGD).
#include <cmath>
#include <stdexcept>
#include <string>

#include "attn/cpu/threading.h"
#include "attn/train/optim.h"

namespace attn::train {

Sgd::Sgd(nn::NamedTensors params, const SgdOptions& options) : Optimizer(std::move(params)), opt_(options) {
  auto bad = [](const std::string& what) { throw std::invalid_argument("Sgd: " + what); };
  if (!(opt_.momentum >= 0)) bad("momentum " + std::to_string(opt_.momentum) + " must be >= 0");
  if (!(opt_.weight_decay >= 0)) bad("weight_decay " + std::to_string(opt_.weight_decay) + " must be >= 0");
  if (!std::isfinite(opt_.dampening)) bad("dampening must be finite");
  if (opt_.nesterov && (opt_.momentum <= 0 || opt_.dampening != 0))
    bad("nesterov needs momentum > 0 and dampening == 0");
  set_lr(opt_.lr);
  if (opt_.momentum != 0) add_buffer_kind("momentum_buffer");
}

void Sgd::update(size_t i, Tensor& param, const Tensor& grad) {
  float* p = param.data();
  const float* g = grad.data();
  const int64_t n = param.numel();
  const float lr = float(lr_), wd = float(opt_.weight_decay), mom = float(opt_.momentum);
  const float keep = float(1.0 - opt_.dampening);
  if (opt_.momentum == 0) {
    // p -= lr * (g + wd * p)
#pragma omp parallel for simd if (n > kParallelGrain)
    for (int64_t k = 0; k < n; ++k) p[k] += -lr * (g[k] + wd * p[k]);
    return;
  }
  float* buf = buffers_[0][i].data();
  const bool first = param_steps_[i] == 1;  // torch: the buffer starts as a copy of the first gradient
  const bool nesterov = opt_.nesterov;
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t k = 0; k < n; ++k) {
    float d = g[k] + wd * p[k];
    float b = first ? d : mom * buf[k] + keep * d;
    buf[k] = b;
    p[k] += -lr * (nesterov ? d + mom * b : b);
  }
}

}  // namespace attn::train
