// int8 and bf16 step products (quant_gemm.h), compiled per instruction set (an
// ISA source, kernels/dispatch.h). Each product has a portable form, written so
// that the compiler vectorises its 32-output inner loops, and, in the AVX-512
// and AVX2 builds, a register-blocked form on the CPU's dot-product
// instructions (functions with their own target attribute, called only when
// the glue says the CPU has them): rows blocked by MR, a panel's 32 outputs in
// 2 zmm (4 ymm) accumulators per row, one broadcast of 4 bytes (2 bf16) of a
// row per k step, as the fp32 micro-kernel of panel_gemm.cpp does. The AVX2
// build without AVX-VNNI multiplies int8 by vpmaddubsw (s8_block_madd), and
// bf16 (which AVX2 has no dot product for) by FMAs on the widened pairs
// (bf16_block_fma).
#include "attn/kernels/quant_gemm.h"

#include <immintrin.h>

#include <cmath>
#include <limits>
#include <type_traits>

#include "attn/simd/vec.h"  // ATTN_SIMD_ISA, the namespace of this build

namespace attn::quant::kernels::ATTN_SIMD_ISA {
namespace {

[[maybe_unused]] uint32_t load_u32(const void* p) {
  uint32_t v;
  __builtin_memcpy(&v, p, 4);
  return v;
}

float bits_to_float(uint32_t u) {
  float x;
  __builtin_memcpy(&x, &u, 4);
  return x;
}

// bf16 of x, round to nearest even (quant_gemm.h's bf16_of; a local copy: an ISA
// source instantiates no header inline function)
uint16_t to_bf16(float x) {
  uint32_t u;
  __builtin_memcpy(&u, &x, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

// c[o] = (c[o] if accumulate) + s v[o] for the panel's first `cols` outputs
void store_panel(const float* v, float s, const float* scale, float* c, int64_t cols, bool accumulate) {
  for (int64_t j = 0; j < cols; ++j) {
    const float x = (s * scale[j]) * v[j];
    c[j] = accumulate ? c[j] + x : x;
  }
}

// --- portable forms: the reference ------------------------------------------

[[maybe_unused]] void s8_panel_portable(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                       float* c, int64_t ldc, bool accumulate) {
  const int8_t* panel = w.data + p * w.K4 * kPanel * 4;
  const int64_t o0 = p * kPanel, cols = std::min(kPanel, w.out - o0);
  for (int64_t i = 0; i < m; ++i) {
    int32_t acc[kPanel] = {};
    const uint8_t* x = q + i * ldq;
    for (int64_t k = 0; k < w.K4; ++k) {
      const int8_t* b = panel + k * kPanel * 4;
      for (int64_t j = 0; j < kPanel; ++j)
        acc[j] += int32_t(x[4 * k]) * b[4 * j] + int32_t(x[4 * k + 1]) * b[4 * j + 1] +
                  int32_t(x[4 * k + 2]) * b[4 * j + 2] + int32_t(x[4 * k + 3]) * b[4 * j + 3];
    }
    float v[kPanel];
    for (int64_t j = 0; j < kPanel; ++j) v[j] = float(acc[j] - w.comp[o0 + j]);
    store_panel(v, a_scale[i], w.scale + o0, c + i * ldc, cols, accumulate);
  }
}

[[maybe_unused]] void bf16_panel_portable(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w,
                                          int64_t p, float* c, int64_t ldc, bool accumulate) {
  const uint16_t* panel = w.data + p * w.K2 * kPanel * 2;
  const int64_t o0 = p * kPanel, cols = std::min(kPanel, w.out - o0);
  for (int64_t i = 0; i < m; ++i) {
    float acc[kPanel] = {};
    const uint16_t* x = a + i * lda;
    for (int64_t k = 0; k < w.K2; ++k) {
      const float x_even = bits_to_float(uint32_t(x[2 * k]) << 16), x_odd = bits_to_float(uint32_t(x[2 * k + 1]) << 16);
      const uint16_t* b = panel + k * kPanel * 2;
      for (int64_t j = 0; j < kPanel; ++j) {  // vdpbf16ps's order: the odd element's product first
        acc[j] += x_odd * bits_to_float(uint32_t(b[2 * j + 1]) << 16);
        acc[j] += x_even * bits_to_float(uint32_t(b[2 * j]) << 16);
      }
    }
    float* cp = c + i * ldc;
    for (int64_t j = 0; j < cols; ++j) cp[j] = accumulate ? cp[j] + acc[j] : acc[j];
  }
}

// --- AVX-512 VNNI / BF16 -----------------------------------------------------
#if defined(__AVX512F__)
// acc += the dot products, in place. Inline assembly rather than the intrinsics:
// GCC 12 compiled _mm512_dpbusd_epi32 / _mm512_dpbf16_ps in this loop as a copy
// of every accumulator per instruction (and spills), and ran at a quarter of the
// instruction's rate (perf annotate, 2026-11-27).
inline __m512i dpbusd(__m512i acc, __m512i u8, __m512i s8) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u8), "v"(s8));
  return acc;
}
inline __m512 dpbf16(__m512 acc, __m512i a, __m512i b) {
  asm("vdpbf16ps %2, %1, %0" : "+v"(acc) : "v"(a), "v"(b));
  return acc;
}
constexpr int kMaxRows = 8;  // 16 accumulators + 2 panel vectors + 1 broadcast: 12 rows' 27 of the 32 zmm spilled

__mmask16 tail_mask(int64_t n) { return n >= 16 ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1u); }

template <int MR>
__attribute__((target("avx512vnni"))) void s8_block_vnni(const uint8_t* q, int64_t ldq, const float* a_scale,
                                                          const S8Panels& w, int64_t p, float* c, int64_t ldc,
                                                          bool accumulate) {
  const int8_t* panel = w.data + p * w.K4 * kPanel * 4;
  const int64_t K4 = w.K4;
  __m512i acc[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t k = 0; k < K4; ++k) {
    const __m512i b0 = _mm512_load_si512(panel + k * 128), b1 = _mm512_load_si512(panel + k * 128 + 64);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512i x = _mm512_set1_epi32(int(load_u32(q + r * ldq + 4 * k)));
      acc[r][0] = dpbusd(acc[r][0], x, b0);
      acc[r][1] = dpbusd(acc[r][1], x, b1);
    }
  }
  const int64_t o0 = p * kPanel, cols = std::min(kPanel, w.out - o0);
  for (int v = 0; v < 2; ++v) {
    const __mmask16 mask = tail_mask(cols - 16 * v);
    if (!mask) break;
    const __m512 scale = _mm512_loadu_ps(w.scale + o0 + 16 * v);
    const __m512i comp = _mm512_loadu_si512(w.comp + o0 + 16 * v);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(acc[r][v], comp));
      __m512 x = _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(a_scale[r]), scale), f);
      float* cp = c + r * ldc + 16 * v;
      if (accumulate) x = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, cp), x);
      _mm512_mask_storeu_ps(cp, mask, x);
    }
  }
}

template <int MR>
__attribute__((target("avx512bf16"))) void bf16_block_native(const uint16_t* a, int64_t lda, const Bf16Panels& w,
                                                              int64_t p, float* c, int64_t ldc, bool accumulate) {
  const uint16_t* panel = w.data + p * w.K2 * kPanel * 2;
  const int64_t K2 = w.K2;
  __m512 acc[MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
  for (int64_t k = 0; k < K2; ++k) {
    const __m512i b0 = _mm512_load_si512(panel + k * 64), b1 = _mm512_load_si512(panel + k * 64 + 32);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const __m512i x = _mm512_set1_epi32(int(load_u32(a + r * lda + 2 * k)));
      acc[r][0] = dpbf16(acc[r][0], x, b0);
      acc[r][1] = dpbf16(acc[r][1], x, b1);
    }
  }
  const int64_t o0 = p * kPanel, cols = std::min(kPanel, w.out - o0);
  for (int v = 0; v < 2; ++v) {
    const __mmask16 mask = tail_mask(cols - 16 * v);
    if (!mask) break;
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      float* cp = c + r * ldc + 16 * v;
      __m512 x = acc[r][v];
      if (accumulate) x = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, cp), x);
      _mm512_mask_storeu_ps(cp, mask, x);
    }
  }
}

// Rows [0, m) of one panel in blocks of kMaxRows; Block<MR>::run does MR rows
#define ATTN_QUANT_ROW_BLOCKS(call)                                                     \
  switch (int(rows)) {                                                                  \
    case 8: call(8); break;                                                             \
    case 7: call(7); break;                                                             \
    case 6: call(6); break;                                                             \
    case 5: call(5); break;                                                             \
    case 4: call(4); break;                                                             \
    case 3: call(3); break;                                                             \
    case 2: call(2); break;                                                             \
    default: call(1); break;                                                            \
  }

void s8_panel_native(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                     float* c, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; i += kMaxRows) {
    const int64_t rows = std::min<int64_t>(kMaxRows, m - i);
#define ATTN_S8_CALL(MR) s8_block_vnni<MR>(q + i * ldq, ldq, a_scale + i, w, p, c + i * ldc, ldc, accumulate)
    ATTN_QUANT_ROW_BLOCKS(ATTN_S8_CALL)
#undef ATTN_S8_CALL
  }
}

void bf16_panel_native(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c,
                       int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; i += kMaxRows) {
    const int64_t rows = std::min<int64_t>(kMaxRows, m - i);
#define ATTN_BF16_CALL(MR) bf16_block_native<MR>(a + i * lda, lda, w, p, c + i * ldc, ldc, accumulate)
    ATTN_QUANT_ROW_BLOCKS(ATTN_BF16_CALL)
#undef ATTN_BF16_CALL
  }
}
#undef ATTN_QUANT_ROW_BLOCKS

// without AVX-512 BF16 (before Cooper Lake / Zen 4): the portable loops
void bf16_panel_plain(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c,
                      int64_t ldc, bool accumulate) {
  bf16_panel_portable(m, a, lda, w, p, c, ldc, accumulate);
}

// without VNNI (an AVX-512 CPU before Cascade Lake): the portable loops
void s8_panel_plain(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                    float* c, int64_t ldc, bool accumulate) {
  s8_panel_portable(m, q, ldq, a_scale, w, p, c, ldc, accumulate);
}

// --- AVX2 with AVX-VNNI ------------------------------------------------------
#elif defined(__AVX2__)
constexpr int kMaxRows = 2;  // 8 accumulators + 4 panel vectors + 1 broadcast of the 16 ymm

template <int MR>
__attribute__((target("avxvnni"))) void s8_block_vnni(const uint8_t* q, int64_t ldq, const float* a_scale,
                                                      const S8Panels& w, int64_t p, float* c, int64_t ldc,
                                                      bool accumulate) {
  const int8_t* panel = w.data + p * w.K4 * kPanel * 4;
  __m256i acc[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm256_setzero_si256();
  for (int64_t k = 0; k < w.K4; ++k) {
    __m256i b[4];
    for (int v = 0; v < 4; ++v) b[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel + k * 128 + 32 * v));
    for (int r = 0; r < MR; ++r) {
      const __m256i x = _mm256_set1_epi32(int(load_u32(q + r * ldq + 4 * k)));
      for (int v = 0; v < 4; ++v) asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc[r][v]) : "x"(x), "x"(b[v]));
    }
  }
  const int64_t o0 = p * kPanel, cols = std::min(kPanel, w.out - o0);
  for (int r = 0; r < MR; ++r) {
    alignas(32) int32_t s[kPanel];
    for (int v = 0; v < 4; ++v) _mm256_store_si256(reinterpret_cast<__m256i*>(s + 8 * v), acc[r][v]);
    float f[kPanel];
    for (int64_t j = 0; j < kPanel; ++j) f[j] = float(s[j] - w.comp[o0 + j]);
    store_panel(f, a_scale[r], w.scale + o0, c + r * ldc, cols, accumulate);
  }
}

// Without VNNI: AVX2's vpmaddubsw (u8 x s8 pairs summed into s16, saturating),
// exact by intgemm's sign trick: with a = q - 128 in [-127, 127] (s8),
// a w = |a| sign(w, a), so vpmaddubsw(|a|, sign(w, a)) sums two products of at
// most 127 x 127 (32,258 < 32,767: never saturates); vpmaddwd with ones then adds
// the pairs into int32. The sum is sum_k a_q w_q itself: no compensation term.
template <int MR>
void s8_block_madd(const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p, float* c,
                   int64_t ldc, bool accumulate) {
  const int8_t* panel = w.data + p * w.K4 * kPanel * 4;
  const __m256i ones = _mm256_set1_epi16(1), flip = _mm256_set1_epi8(char(0x80));
  __m256i acc[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm256_setzero_si256();
  for (int64_t k = 0; k < w.K4; ++k) {
    __m256i b[4];
    for (int v = 0; v < 4; ++v) b[v] = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel + k * 128 + 32 * v));
    for (int r = 0; r < MR; ++r) {
      const __m256i a = _mm256_xor_si256(_mm256_set1_epi32(int(load_u32(q + r * ldq + 4 * k))), flip);  // q - 128
      const __m256i abs_a = _mm256_abs_epi8(a);
      for (int v = 0; v < 4; ++v) {
        const __m256i pairs = _mm256_maddubs_epi16(abs_a, _mm256_sign_epi8(b[v], a));
        acc[r][v] = _mm256_add_epi32(acc[r][v], _mm256_madd_epi16(pairs, ones));
      }
    }
  }
  const int64_t o0 = p * kPanel, cols = std::min(kPanel, w.out - o0);
  for (int r = 0; r < MR; ++r) {
    alignas(32) int32_t s[kPanel];
    for (int v = 0; v < 4; ++v) _mm256_store_si256(reinterpret_cast<__m256i*>(s + 8 * v), acc[r][v]);
    float f[kPanel];
    for (int64_t j = 0; j < kPanel; ++j) f[j] = float(s[j]);
    store_panel(f, a_scale[r], w.scale + o0, c + r * ldc, cols, accumulate);
  }
}

// Rows [0, m) in blocks of kMaxRows, the last one row at a time: block(i, MR) for
// MR a std::integral_constant
template <class Block>
void in_row_blocks(int64_t m, Block block) {
  int64_t i = 0;
  for (; i + kMaxRows <= m; i += kMaxRows) block(i, std::integral_constant<int, kMaxRows>{});
  for (; i < m; ++i) block(i, std::integral_constant<int, 1>{});
}

void s8_panel_native(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                     float* c, int64_t ldc, bool accumulate) {
  in_row_blocks(m, [&](int64_t i, auto mr) {
    s8_block_vnni<mr.value>(q + i * ldq, ldq, a_scale + i, w, p, c + i * ldc, ldc, accumulate);
  });
}

// the AVX2 build's int8 products on a CPU without AVX-VNNI
void s8_panel_plain(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                    float* c, int64_t ldc, bool accumulate) {
  in_row_blocks(m, [&](int64_t i, auto mr) {
    s8_block_madd<mr.value>(q + i * ldq, ldq, a_scale + i, w, p, c + i * ldc, ldc, accumulate);
  });
}

// bf16 without a bf16 dot product: each pair of the panel (even element in the
// low half of a 32-bit lane, odd in the high) widened to two fp32 vectors by a
// mask and a shift (a bf16 is the top half of its fp32), then two FMAs per pair,
// the odd element's first as vdpbf16ps does. Each bf16 x bf16 product is exact in
// fp32, so the FMA rounds as the portable loop's add: the same numbers. MR = 2:
// 8 accumulators, 4 activations and 3 panel vectors of the 16 ymm. The portable
// loops ran bf16 at a fifth of fp32's speed on an AVX2 machine (Zen 3, 2026-11-28).
template <int MR>
void bf16_block_fma(const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c, int64_t ldc,
                    bool accumulate) {
  const uint16_t* panel = w.data + p * w.K2 * kPanel * 2;
  const __m256i high = _mm256_set1_epi32(int(0xffff0000u));
  __m256 acc[MR][4];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < 4; ++v) acc[r][v] = _mm256_setzero_ps();
  for (int64_t k = 0; k < w.K2; ++k) {
    __m256 x_odd[MR], x_even[MR];
    for (int r = 0; r < MR; ++r) {
      const __m256i x = _mm256_set1_epi32(int(load_u32(a + r * lda + 2 * k)));
      x_odd[r] = _mm256_castsi256_ps(_mm256_and_si256(x, high));
      x_even[r] = _mm256_castsi256_ps(_mm256_slli_epi32(x, 16));
    }
    for (int v = 0; v < 4; ++v) {
      const __m256i b = _mm256_load_si256(reinterpret_cast<const __m256i*>(panel + k * 64 + 16 * v));
      const __m256 b_odd = _mm256_castsi256_ps(_mm256_and_si256(b, high));
      const __m256 b_even = _mm256_castsi256_ps(_mm256_slli_epi32(b, 16));
      for (int r = 0; r < MR; ++r) {
        acc[r][v] = _mm256_fmadd_ps(x_odd[r], b_odd, acc[r][v]);
        acc[r][v] = _mm256_fmadd_ps(x_even[r], b_even, acc[r][v]);
      }
    }
  }
  const int64_t cols = std::min(kPanel, w.out - p * kPanel);
  for (int r = 0; r < MR; ++r) {
    alignas(32) float f[kPanel];
    for (int v = 0; v < 4; ++v) _mm256_store_ps(f + 8 * v, acc[r][v]);
    float* cp = c + r * ldc;
    for (int64_t j = 0; j < cols; ++j) cp[j] = accumulate ? cp[j] + f[j] : f[j];
  }
}

void bf16_panel_plain(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c,
                      int64_t ldc, bool accumulate) {
  in_row_blocks(m, [&](int64_t i, auto mr) {
    bf16_block_fma<mr.value>(a + i * lda, lda, w, p, c + i * ldc, ldc, accumulate);
  });
}

// AVX2 has no bf16 dot product (cpu::native_bf16 is false): the FMA kernel
void bf16_panel_native(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c,
                       int64_t ldc, bool accumulate) {
  bf16_panel_plain(m, a, lda, w, p, c, ldc, accumulate);
}

// --- baseline: no dot-product instructions -----------------------------------
#else
void s8_panel_native(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                     float* c, int64_t ldc, bool accumulate) {
  s8_panel_portable(m, q, ldq, a_scale, w, p, c, ldc, accumulate);
}
void s8_panel_plain(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p,
                    float* c, int64_t ldc, bool accumulate) {
  s8_panel_portable(m, q, ldq, a_scale, w, p, c, ldc, accumulate);
}
void bf16_panel_native(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c,
                       int64_t ldc, bool accumulate) {
  bf16_panel_portable(m, a, lda, w, p, c, ldc, accumulate);
}
void bf16_panel_plain(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p, float* c,
                      int64_t ldc, bool accumulate) {
  bf16_panel_portable(m, a, lda, w, p, c, ldc, accumulate);
}
#endif

}  // namespace

void quantize_rows(int64_t m, int64_t K, const float* a, int64_t lda, uint8_t* q, int64_t ldq, float* scale) {
  const int64_t padded = (K + 3) / 4 * 4;
  for (int64_t i = 0; i < m; ++i) {
    const float* x = a + i * lda;
    float amax = 0.0f;
    int nans = 0;  // max() drops a NaN; the check below must still see it
#pragma omp simd reduction(max : amax) reduction(+ : nans)
    for (int64_t k = 0; k < K; ++k) {
      const float v = std::fabs(x[k]);
      amax = amax < v ? v : amax;
      nans += v != v ? 1 : 0;
    }
    if (nans) amax = std::numeric_limits<float>::quiet_NaN();
    uint8_t* out = q + i * ldq;
    if (!(amax > 0.0f) || !std::isfinite(amax)) {  // all zero (or not finite: no scale represents it)
      for (int64_t k = 0; k < padded; ++k) out[k] = 128;
      scale[i] = amax > 0.0f || amax != amax ? amax : 0.0f;  // inf or NaN: the products are NaN, as fp32's
      continue;
    }
    const float inv = 127.0f / amax;
    // simd::round_nearest: ties to even as std::nearbyint, but a builtin the
    // compiler vectorises (vrndscaleps); the scalar loop was ~8% of an int8 search
#pragma omp simd
    for (int64_t k = 0; k < K; ++k) out[k] = uint8_t(int32_t(simd::round_nearest(x[k] * inv)) + 128);
    for (int64_t k = K; k < padded; ++k) out[k] = 128;
    scale[i] = amax / 127.0f;
  }
}

void gemm_s8(int64_t m, const uint8_t* q, int64_t ldq, const float* a_scale, const S8Panels& w, int64_t p0, int64_t p1,
             float* c, int64_t ldc, bool accumulate, bool native) {
  for (int64_t p = p0; p < p1; ++p) {
    float* cp = c + (p - p0) * kPanel;
    if (native)
      s8_panel_native(m, q, ldq, a_scale, w, p, cp, ldc, accumulate);
    else
      s8_panel_plain(m, q, ldq, a_scale, w, p, cp, ldc, accumulate);
  }
}

void to_bf16_rows(int64_t m, int64_t K, const float* a, int64_t lda, uint16_t* out, int64_t ldo) {
  const int64_t padded = (K + 1) / 2 * 2;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t k = 0; k < K; ++k) out[i * ldo + k] = to_bf16(a[i * lda + k]);
    for (int64_t k = K; k < padded; ++k) out[i * ldo + k] = 0;
  }
}

void gemm_bf16(int64_t m, const uint16_t* a, int64_t lda, const Bf16Panels& w, int64_t p0, int64_t p1, float* c,
               int64_t ldc, bool accumulate, bool native) {
  for (int64_t p = p0; p < p1; ++p) {
    float* cp = c + (p - p0) * kPanel;
    if (native)
      bf16_panel_native(m, a, lda, w, p, cp, ldc, accumulate);
    else
      bf16_panel_plain(m, a, lda, w, p, cp, ldc, accumulate);
  }
}

}  // namespace attn::quant::kernels::ATTN_SIMD_ISA
