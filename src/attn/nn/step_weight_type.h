// The element type of a decoder step's prepared weights and products, a
// search's compute type (`--compute fp32|int8|bf16`). The storage and kernels
// of each type are one row of nn/step_weight_types.h (internal).
#pragma once

namespace attn::nn {

enum class StepWeightType { F32, I8, BF16 };

}  // namespace attn::nn
