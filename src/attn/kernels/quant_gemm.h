// Reduced-precision products x W^T for a decoder step's prepared weights
// (nn/step_weight_types.h's int8 and bf16 rows), compiled per instruction set
// (an ISA source, kernels/dispatch.h). The glue (nn/step_weight_types.cpp)
// quantises and packs the weights once; these kernels run per product.
//
// int8 (CTranslate2's scheme): W [out, K] quantised symmetrically per output
// row, w_q = round(W / s_w), s_w = max|W[o, :]| / 127; each activation row
// likewise at run time, a_q = round(a / s_a), stored as the unsigned a_q + 128
// so that VNNI's unsigned x signed byte products (vpdpbusd) apply. Then
//   c[i, o] = s_a[i] s_w[o] (sum_k (a_q[i, k] + 128) w_q[o, k] - comp[o]),
//   comp[o] = 128 sum_k w_q[o, k],
// exact in int32 (|sum| <= K 255 127 < 2^31 for K < 66000).
// bf16: W rounded to bfloat16 (round to nearest even), activations too at run
// time, products accumulated in fp32 pair by pair as vdpbf16ps does (odd
// element of a pair first, then even; each bf16 x bf16 product is exact in fp32).
//
// Layouts, by panels of kPanel = 32 outputs (the StepLinear unit):
//   int8  panel p: [K4][32][4] int8, K4 = ceil(K / 4), zero-padded in k and o
//   bf16  panel p: [K2][32][2] uint16, K2 = ceil(K / 2), zero-padded
//   activations: rows of K4 * 4 bytes (int8; pads 128) or K2 * 2 bf16 (pads 0)
// Which instructions run: AVX-512 VNNI (vpdpbusd zmm) or AVX-VNNI (ymm) for
// int8, AVX-512 BF16 (vdpbf16ps) for bf16 where the CPU has them (the
// `native` flags, from cpu::features()); otherwise, in the AVX2 build, int8 on
// vpmaddubsw and bf16 on fp32 FMAs of the widened pairs (the same numbers), or
// the same arithmetic in portable loops (the reference the tests hold the fast
// paths to).
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::quant::kernels {

constexpr int64_t kPanel = 32;  // outputs per panel (= rnn_gemm::kPanel, StepLinear::kUnit)

// The packed int8 weight as the kernels read it
struct S8Panels {
  const int8_t* data = nullptr;   // [panels][K4][32][4], 64-byte aligned
  const float* scale = nullptr;   // [panels * 32] s_w per output (0 past `out`)
  const int32_t* comp = nullptr;  // [panels * 32] 128 sum_k w_q
  int64_t K4 = 0, out = 0;
};

// The packed bf16 weight as the kernels read it
struct Bf16Panels {
  const uint16_t* data = nullptr;  // [panels][K2][32][2], 64-byte aligned
  int64_t K2 = 0, out = 0;
};

// Rows of activations for the int8 products: q[i, k] = round(a[i, k] / s_a[i]) +
// 128 for k < K (128 for K <= k < K4 * 4), s_a[i] = max_k |a[i, k]| / 127 (0 for
// an all-zero row, whose q is all 128). a [m, K] with row stride lda, q with ldq >= K4 * 4.
// Round to nearest even in every build, so that they agree byte for byte.
//
// c[i, o - 32 p0] (+)= the products for rows i < m and the outputs o of panels
// [p0, p1) (o < out): c points at the first panel's column 0, row stride ldc.
// native: use the dot-product instructions (cpu::native_int8 / native_bf16 say
// whether the CPU has them); without them, the AVX2 build runs int8 on
// vpmaddubsw (exact: intgemm's sign trick) and bf16 on FMAs (exact: each
// product of two bf16 is a float), elsewhere the portable loops.
ATTN_ISA_DECLARE(void quantize_rows(int64_t m, int64_t K, const float* a, int64_t lda, uint8_t* q, int64_t ldq,
                                    float* scale);
                 void gemm_s8(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w,
                              int64_t p0, int64_t p1, float* c, int64_t ldc, bool accumulate, bool native);
                 void to_bf16_rows(int64_t m, int64_t K, const float* a, int64_t lda, uint16_t* out, int64_t ldo);
                 void gemm_bf16(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p0,
                                int64_t p1, float* c, int64_t ldc, bool accumulate, bool native);)

inline void quantize_rows(int64_t m, int64_t K, const float* a, int64_t lda, uint8_t* q, int64_t ldq, float* scale) {
  ATTN_ISA_CALL(quantize_rows, m, K, a, lda, q, ldq, scale);
}
inline void gemm_s8(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p0,
                    int64_t p1, float* c, int64_t ldc, bool accumulate, bool native) {
  ATTN_ISA_CALL(gemm_s8, m, q, ldq, a_scale, w, p0, p1, c, ldc, accumulate, native);
}
// out[i, k] = bf16(a[i, k]) (round to nearest even; NaN stays NaN) for k < K, 0 up to K2 * 2
inline void to_bf16_rows(int64_t m, int64_t K, const float* a, int64_t lda, uint16_t* out, int64_t ldo) {
  ATTN_ISA_CALL(to_bf16_rows, m, K, a, lda, out, ldo);
}
inline void gemm_bf16(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p0, int64_t p1,
                      float* c, int64_t ldc, bool accumulate, bool native) {
  ATTN_ISA_CALL(gemm_bf16, m, a, lda, w, p0, p1, c, ldc, accumulate, native);
}

// bf16 of one float, round to nearest even (the glue packs weights with it)
inline uint16_t bf16_of(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays a (quiet) NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}
inline float float_of_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float x;
  __builtin_memcpy(&x, &u, 4);
  return x;
}

}  // namespace attn::quant::kernels
