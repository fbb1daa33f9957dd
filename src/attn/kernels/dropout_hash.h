// Counter-based attention dropout: whether weight (b, h, i, j) is kept is a
// hash of (seed, row, j) with row = (b * heads + h) * q_len + i, so the fused
// kernel's backward regenerates the forward's pattern tile by tile without
// storing a [q_len, k_len] mask (as FlashAttention does with Philox), and the
// materialised path draws the very same pattern (the two are compared in tests).
//
// Included by baseline code (mask.cpp) and by the ISA source of the fused
// kernel (kernels/flash.cpp, compiled per instruction set, kernels/dispatch.h): the
// functions have internal linkage (an unnamed namespace), so every object keeps
// its own copy and the linker can never bind baseline code to an AVX-512 one.
// Integer arithmetic only: every build draws the same pattern.
#pragma once
#include <cstdint>

namespace attn::attention::detail {
namespace {

inline uint32_t fmix32(uint32_t x) {  // MurmurHash3's finaliser
  x ^= x >> 16;
  x *= 0x85ebca6bu;
  x ^= x >> 13;
  x *= 0xc2b2ae35u;
  x ^= x >> 16;
  return x;
}

// Per-row key: mixes the seed and the 64-bit row index.
inline uint32_t dropout_row_key(uint64_t seed, uint64_t row) {
  uint32_t h = fmix32(uint32_t(row) * 0x9e3779b1u ^ uint32_t(seed));
  return fmix32(h ^ uint32_t(row >> 32) * 0x7feb352du ^ uint32_t(seed >> 32));
}

// Drop threshold on a 24-bit uniform: drop when the draw is below it.
inline uint32_t dropout_threshold(float p) { return uint32_t(double(p) * double(1u << 24)); }

// 24-bit uniform draw for element j of the row with key `row_key`.
inline uint32_t dropout_draw(uint32_t row_key, uint64_t j) { return fmix32(row_key + uint32_t(j) * 0x85ebca77u) >> 8; }

// out[l] = keep(row_keys[l], j) ? scale : 0 for n lanes (written so the
// compiler vectorises it).
inline void dropout_factors(const uint32_t* row_keys, uint64_t j, uint32_t threshold, float scale, float* out, int n) {
  uint32_t add = uint32_t(j) * 0x85ebca77u;
  for (int l = 0; l < n; ++l) {
    uint32_t x = row_keys[l] + add;
    x ^= x >> 16;
    x *= 0x85ebca6bu;
    x ^= x >> 13;
    x *= 0xc2b2ae35u;
    x ^= x >> 16;
    out[l] = (x >> 8) >= threshold ? scale : 0.0f;
  }
}

}  // namespace
}  // namespace attn::attention::detail
