// The array loops of the activations (autograd/ops_activation.cpp: gelu,
// linear_act), compiled per instruction set (an ISA source, kernels/dispatch.h).
//
// GELU, exact form: gelu(h) = h Phi(h), Phi the standard normal CDF,
// gelu'(h) = Phi(h) + h phi(h). Phi comes from erfc by Abramowitz & Stegun 7.1.26
// (|error| <= 1.5e-7), evaluated on |h| so that Phi(h) for h < 0 is the small
// erfc term itself, not 1 minus a number near 1 (PyTorch's vectorised erf uses
// the same formula); exp(-h^2 / 2) is shared by Phi and phi. Vectorised through
// simd/math.h's exp (std::erf is a libm call per element: the GELU forward took
// as long as the feed-forward GEMM before it).
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::kernels::activation {

enum class Kind { ReLU, GELU };

ATTN_ISA_DECLARE(void bias_act(Kind act, float* h, float* y, const float* bias, int64_t rows, int64_t n);
                 void act_backward(Kind act, const float* saved, const float* dy, float* dh, int64_t count);
                 void gelu(const float* x, float* y, int64_t count);)

// h [rows, n] += bias [n] (null: none), then y = act(h); y may be h (ReLU keeps
// only its output)
inline void bias_act(Kind act, float* h, float* y, const float* bias, int64_t rows, int64_t n) {
  ATTN_ISA_CALL(bias_act, act, h, y, bias, rows, n);
}
// dh = dy * act'(h), count floats: `saved` is h for GELU, the output y for ReLU
// (y > 0 exactly where h > 0)
inline void act_backward(Kind act, const float* saved, const float* dy, float* dh, int64_t count) {
  ATTN_ISA_CALL(act_backward, act, saved, dy, dh, count);
}
// y = gelu(x), count floats
inline void gelu(const float* x, float* y, int64_t count) { ATTN_ISA_CALL(gelu, x, y, count); }

}  // namespace attn::kernels::activation
