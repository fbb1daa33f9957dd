// Out-of-place transpose with a scale (internal header of the attention kernels).
#pragma once
#include <cstdint>

#include "attn/simd/vec.h"  // ATTN_SIMD_ISA

#if defined(__AVX2__)
#include <immintrin.h>
#endif

// ISA-internal (kernels/dispatch.h): included only by ISA sources, so its inline
// functions live in the namespace of the instruction set being compiled.
namespace attn::attention::detail {
inline namespace ATTN_SIMD_ISA {

// dst[r * dst_ld + c] = scale * src[c * src_ld + r] for r < rows, c < cols: the
// transposes between row-major tensors and the lane layouts of the fused
// kernels (flash.cpp: queries on the lanes; additive_step.cpp: batch rows on
// the lanes of the query projection). 8 x 8 blocks
// go through registers (8 loads, 24 shuffles, 8 stores); a plain loop costs
// ~4x more and showed in profiles at short lengths (L = 128).
inline void transpose_scaled(const float* src, int64_t src_ld, float* dst, int64_t dst_ld, int64_t rows, int64_t cols,
                      float scale) {
  int64_t r8 = 0, c8 = 0;
#if defined(__AVX2__)
  r8 = rows / 8 * 8, c8 = cols / 8 * 8;
  const __m256 vs = _mm256_set1_ps(scale);
  for (int64_t c = 0; c < c8; c += 8)
    for (int64_t r = 0; r < r8; r += 8) {
      const float* s0 = src + c * src_ld + r;
      __m256 a0 = _mm256_loadu_ps(s0), a1 = _mm256_loadu_ps(s0 + src_ld), a2 = _mm256_loadu_ps(s0 + 2 * src_ld),
             a3 = _mm256_loadu_ps(s0 + 3 * src_ld), a4 = _mm256_loadu_ps(s0 + 4 * src_ld),
             a5 = _mm256_loadu_ps(s0 + 5 * src_ld), a6 = _mm256_loadu_ps(s0 + 6 * src_ld),
             a7 = _mm256_loadu_ps(s0 + 7 * src_ld);
      __m256 t0 = _mm256_unpacklo_ps(a0, a1), t1 = _mm256_unpackhi_ps(a0, a1), t2 = _mm256_unpacklo_ps(a2, a3),
             t3 = _mm256_unpackhi_ps(a2, a3), t4 = _mm256_unpacklo_ps(a4, a5), t5 = _mm256_unpackhi_ps(a4, a5),
             t6 = _mm256_unpacklo_ps(a6, a7), t7 = _mm256_unpackhi_ps(a6, a7);
      __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE),
             u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE),
             u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE),
             u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      float* d0 = dst + r * dst_ld + c;
      _mm256_storeu_ps(d0, _mm256_mul_ps(_mm256_permute2f128_ps(u0, u4, 0x20), vs));
      _mm256_storeu_ps(d0 + dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u1, u5, 0x20), vs));
      _mm256_storeu_ps(d0 + 2 * dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u2, u6, 0x20), vs));
      _mm256_storeu_ps(d0 + 3 * dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u3, u7, 0x20), vs));
      _mm256_storeu_ps(d0 + 4 * dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u0, u4, 0x31), vs));
      _mm256_storeu_ps(d0 + 5 * dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u1, u5, 0x31), vs));
      _mm256_storeu_ps(d0 + 6 * dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u2, u6, 0x31), vs));
      _mm256_storeu_ps(d0 + 7 * dst_ld, _mm256_mul_ps(_mm256_permute2f128_ps(u3, u7, 0x31), vs));
    }
#endif
  // the ragged edges: rows past the last full 8 (all columns), columns past it (full rows)
  for (int64_t r = r8; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) dst[r * dst_ld + c] = scale * src[c * src_ld + r];
  for (int64_t r = 0; r < r8; ++r)
    for (int64_t c = c8; c < cols; ++c) dst[r * dst_ld + c] = scale * src[c * src_ld + r];
}

}  // namespace ATTN_SIMD_ISA
}  // namespace attn::attention::detail
