// The element-wise operations of kernels::binary / kernels::unary (kernels.h),
// apart so that the per-instruction-set array kernels (kernels/elementwise.h)
// name them without the Tensor API.
#pragma once

namespace attn::kernels {

enum class Binary { Add, Sub, Mul, Div };
enum class Unary { Exp, Log, Tanh, Sigmoid, Relu, Sqrt };

}  // namespace attn::kernels
