// Optimizers: SGD, Adam and AdamW with PyTorch's update rules and defaults
// (torch.optim in 1.13, single-tensor path), so a run here and a run in torch
// on the same gradients give the same parameters (tests/test_train.cpp holds
// them equal to 1e-6 relative).
//
// An optimizer holds a list of named parameters (nn::NamedTensors, e.g. from
// Module::named_parameters()) and updates them in place. Every per-parameter
// buffer (momentum, exp_avg, exp_avg_sq) is allocated once, in the
// constructor, with the parameter's shape; step() allocates nothing and runs one
// flat OpenMP/SIMD loop per parameter.
//
// Parameters whose .grad() is undefined are skipped by step(), as in PyTorch:
// no weight decay, no momentum, and their own step count does not advance.
// Each parameter therefore keeps its own step count (Adam's bias correction
// uses it), and the optimizer keeps the number of step() calls.
//
// State for checkpoints (state() / load_state()), as named tensors:
//   "step"                  [2]      number of step() calls
//   "step.<param>"          [2]      steps applied to <param>
//   "exp_avg.<param>"       [param]  Adam / AdamW first moment
//   "exp_avg_sq.<param>"    [param]  Adam / AdamW second moment
//   "momentum_buffer.<param>" [param] SGD with momentum != 0
// Per-parameter entries exist only for parameters that have been stepped at
// least once (as torch's state dict). A count c is stored as [c / 2^24,
// c % 2^24]: both halves are integers exactly representable in F32, so counts
// up to 2^48 round-trip exactly through an F32-only safetensors file.
// The learning rate is not tensor state (schedules set it, and a double does
// not fit F32 exactly); checkpoint.h saves lr() in the optimizer file's
// metadata with 17 digits and restores it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "attn/nn/module.h"

namespace attn::train {

// Base class: parameter list, per-parameter step counts, learning rate,
// zero_grad and the state import/export shared by all optimizers.
class Optimizer {
public:
  // `params`: names unique, tensors defined and distinct. Throws
  // std::invalid_argument otherwise.
  explicit Optimizer(nn::NamedTensors params);
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update to every parameter that has a gradient.
  void step();

  // set_to_none (default, as PyTorch >= 2.0): drops every .grad, so the next
  // backward allocates it afresh and step() skips parameters it does not reach.
  // !set_to_none (PyTorch 1.x default): fills existing grads with zeros in
  // place; no allocation, and zero-grad parameters are still stepped (weight
  // decay and momentum apply to them, as in PyTorch).
  void zero_grad(bool set_to_none = true);

  double lr() const { return lr_; }
  // For schedules: takes effect at the next step(). Throws when lr < 0 or not finite.
  void set_lr(double lr);

  int64_t step_count() const { return step_count_; }
  const nn::NamedTensors& params() const { return params_; }
  // "sgd", "adam" or "adamw": written into checkpoints and checked on load.
  virtual const char* name() const = 0;

  // The state as named tensors (see the file comment). Moment buffers share
  // storage with the optimizer: save them before the next step().
  nn::NamedTensors state() const;
  // Restores a state exported by the same kind of optimizer over parameters
  // with the same names and shapes. Validates everything before changing
  // anything; throws std::invalid_argument naming the offending entry
  // (unknown name, wrong shape, missing companion buffer, malformed count).
  void load_state(const nn::NamedTensors& state);

protected:
  // The names of the per-parameter buffers this optimizer keeps, e.g.
  // {"exp_avg", "exp_avg_sq"}; buffers_[b][i] is buffer b of parameter i.
  void add_buffer_kind(const std::string& kind);
  // One update of parameter i (its grad is defined and has its shape);
  // param_steps_[i] has already been incremented.
  virtual void update(size_t i, Tensor& param, const Tensor& grad) = 0;

  nn::NamedTensors params_;
  std::vector<int64_t> param_steps_;         // per parameter: updates applied
  std::vector<std::string> buffer_kinds_;    // per buffer kind: its state-name prefix
  std::vector<std::vector<Tensor>> buffers_; // [kind][param], each the param's shape
  double lr_ = 0.0;
  int64_t step_count_ = 0;
};

struct SgdOptions {
  double lr = 1e-3;            // learning rate (PyTorch 1.13 requires one; 1e-3 is torch >= 2.2's default)
  double momentum = 0.0;       // momentum factor; 0 = plain SGD
  double dampening = 0.0;      // scales the new gradient in the momentum buffer by (1 - dampening)
  double weight_decay = 0.0;   // L2 penalty: grad += weight_decay * param
  bool nesterov = false;       // Nesterov momentum; needs momentum > 0 and dampening == 0
};

// PyTorch SGD (torch.optim.SGD), per element:
//   g = grad + weight_decay * p
//   buf = g                                   (first step of this parameter)
//   buf = momentum * buf + (1 - dampening) * g  (later steps)
//   g = nesterov ? g + momentum * buf : buf   (when momentum != 0)
//   p -= lr * g
class Sgd : public Optimizer {
public:
  Sgd(nn::NamedTensors params, const SgdOptions& options = {});
  const char* name() const override { return "sgd"; }
  const SgdOptions& options() const { return opt_; }

private:
  void update(size_t i, Tensor& param, const Tensor& grad) override;
  SgdOptions opt_;
};

struct AdamOptions {
  double lr = 1e-3;            // learning rate
  double beta1 = 0.9;          // decay of the first-moment (mean) estimate
  double beta2 = 0.999;        // decay of the second-moment (uncentred variance) estimate
  double eps = 1e-8;           // added to sqrt(v_hat) for numerical stability
  double weight_decay = 0.0;   // L2 penalty added to the gradient: g += weight_decay * p
};

// AdamW's options: the same fields as Adam's; only weight_decay's default
// differs (PyTorch: 1e-2), and here it is decoupled from the gradient.
struct AdamWOptions {
  double lr = 1e-3;            // learning rate
  double beta1 = 0.9;          // decay of the first-moment (mean) estimate
  double beta2 = 0.999;        // decay of the second-moment (uncentred variance) estimate
  double eps = 1e-8;           // added to sqrt(v_hat) for numerical stability
  double weight_decay = 1e-2;  // decoupled decay: p *= 1 - lr * weight_decay before the Adam update
};

// Adam (Kingma & Ba 2015, torch.optim.Adam), per element, t = this parameter's step:
//   g = grad + weight_decay * p                       (Adam only: coupled L2)
//   p *= 1 - lr * weight_decay                        (AdamW only: decoupled, Loshchilov & Hutter 2019)
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
class Adam : public Optimizer {
public:
  Adam(nn::NamedTensors params, const AdamOptions& options = {});
  const char* name() const override { return decoupled_ ? "adamw" : "adam"; }
  const AdamOptions& options() const { return opt_; }

protected:
  Adam(nn::NamedTensors params, const AdamOptions& options, bool decoupled);

private:
  void update(size_t i, Tensor& param, const Tensor& grad) override;
  AdamOptions opt_;
  bool decoupled_;
};

// AdamW (torch.optim.AdamW): Adam with decoupled weight decay.
class AdamW : public Adam {
public:
  AdamW(nn::NamedTensors params, const AdamWOptions& options = {});
};

}  // namespace attn::train
