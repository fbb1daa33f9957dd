// Differentiable ops for step-by-step recurrences over a time-major tensor.
//
// A decoder that runs one step at a time needs row t of a precomputed
// [T, ...] tensor at step t. `slice` would do, but its backward writes a full
// [T, ...] zero tensor per step (quadratic in T); unbind0 hands out all T rows
// as views in one op whose backward assembles one [T, ...] gradient.
#pragma once
#include <vector>

#include "attn/autograd/ops.h"

namespace attn {

// x [T, rest...] -> T tensors [rest...], tensor t sharing row t of x's storage.
// Differentiable op "unbind": dx[t] = d(out_t) (zeros for outputs without a gradient).
std::vector<Tensor> unbind0(const Tensor& x);

}  // namespace attn
