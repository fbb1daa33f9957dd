// Gradient clipping by the global norm over all parameters' gradients
// (torch.nn.utils.clip_grad_norm_).
#pragma once
#include "attn/nn/module.h"

namespace attn::train {

struct ClipGradOptions {
  double norm_type = 2.0;           // p of the p-norm (> 0), or INFINITY for the max-abs norm
  bool error_if_nonfinite = false;  // throw std::runtime_error when the total norm is NaN or inf
};

// total = ||(||g_1||_p, ..., ||g_k||_p)||_p over the gradients that are
// defined (parameters without a grad are ignored; none at all gives 0).
// Computed in double. When total > max_norm, every gradient is scaled in
// place by max_norm / (total + 1e-6), as PyTorch does. Returns total (before
// clipping). A NaN/inf total scales every gradient by NaN/0 as in PyTorch
// unless error_if_nonfinite. Throws std::invalid_argument when max_norm < 0
// or norm_type <= 0.
double clip_grad_norm(const nn::NamedTensors& params, double max_norm, const ClipGradOptions& options = {});

}  // namespace attn::train
