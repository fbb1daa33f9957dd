// Dropout whose pattern is a hash of (seed, row, column) instead of draws from
// a stream in order (ops.h's dropout): the mask is never stored (the backward
// regenerates it from the seed) and the loop runs in parallel. For layers that
// draw one seed per call from their own stream (nn::HashedDropout).
#pragma once
#include <cstdint>

#include "attn/tensor/tensor.h"

namespace attn {

// x [..., n] -> x * mask, mask [..., n] = 0 with probability p, else 1/(1-p);
// element (r, j) of x read as [rows, n] is dropped when hash(seed, r, j) says so
// (kernels/dropout.h). Identity when p == 0. Throws for p outside [0, 1).
Tensor dropout_hashed(const Tensor& x, float p, uint64_t seed);

}  // namespace attn
