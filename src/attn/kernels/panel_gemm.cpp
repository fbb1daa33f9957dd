// Packed-weight step GEMM kernels (see rnn_gemm.h). The micro-kernel keeps an
// MR x 32 block of C in MR * kNV vector registers (kNV = 32 / simd::kLanes),
// streams the panel's K rows of 32 floats, and broadcasts one A element per row
// and k. MR is as large as the register file allows: 12 with AVX-512 (24
// accumulators + 2 B vectors of the 32 zmm registers), 3 with AVX2 (12 + 4 of
// 16 ymm), 2 in the scalar build (64 float accumulators the compiler packs into
// xmm registers). An ISA source (kernels/dispatch.h): compiled once per instruction set.
//
// Written on simd::vf, not on a 64-byte GCC vector type: outside AVX-512 GCC
// lowered that type's arrays to memory and element-wise code, and the AVX2 and
// scalar builds ran 20-60x slower (batch-64 decoding at 10-21 sentences/s
// against 1230 with AVX-512, measured 2026-11-24).
#include "attn/kernels/panel_gemm.h"

#include "attn/simd/vec.h"

namespace attn::rnn_gemm::kernels::ATTN_SIMD_ISA {
namespace {

using namespace simd;
constexpr int kNV = int(kPanel) / kLanes;  // vectors per panel row
static_assert(kNV * kLanes == kPanel);
#if defined(__AVX512F__)
#define ATTN_GEMM_MAX_ROWS 12
#elif defined(__AVX2__)
#define ATTN_GEMM_MAX_ROWS 3
#else
#define ATTN_GEMM_MAX_ROWS 2
#endif
constexpr int kMaxRows = ATTN_GEMM_MAX_ROWS;

template <int MR>
void micro_kernel(int64_t K, const float* __restrict a, int64_t lda, const float* __restrict panel,
                  float* __restrict c, int64_t ldc, int64_t cols, bool accumulate) {
  vf acc[MR][kNV];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 32
    for (int v = 0; v < kNV; ++v) acc[r][v] = zero();
  for (int64_t k = 0; k < K; ++k) {
    // the panel streams from L2 (64-192 KB): fetch 16 rows ahead (measured best
    // of 4/8/16/32 here: +20% over none; prefetching A's rows as well was worse)
    __builtin_prefetch(panel + (k + 16) * kPanel);
    __builtin_prefetch(panel + (k + 16) * kPanel + 16);
    vf b[kNV];
#pragma GCC unroll 32
    for (int v = 0; v < kNV; ++v) b[v] = load(panel + k * kPanel + v * kLanes);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const vf s = set1(a[r * lda + k]);
#pragma GCC unroll 32
      for (int v = 0; v < kNV; ++v) acc[r][v] = fmadd(b[v], s, acc[r][v]);
    }
  }
  if (cols == kPanel) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r)
#pragma GCC unroll 32
      for (int v = 0; v < kNV; ++v) {
        float* cp = c + r * ldc + v * kLanes;
        store(cp, accumulate ? add(load(cp), acc[r][v]) : acc[r][v]);
      }
    return;
  }
  // a group's last, partial panel
  for (int r = 0; r < MR; ++r) {
    alignas(64) float tmp[kPanel];
    for (int v = 0; v < kNV; ++v) store(tmp + v * kLanes, acc[r][v]);
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[j] : tmp[j];
  }
}

using MicroKernel = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t, bool);
// row counts 1 .. kMaxRows - 1, the tail of a block of rows
constexpr MicroKernel kKernels[] = {nullptr, micro_kernel<1>
#if ATTN_GEMM_MAX_ROWS > 2
                                    , micro_kernel<2>
#endif
#if ATTN_GEMM_MAX_ROWS > 3
                                    , micro_kernel<3>, micro_kernel<4>, micro_kernel<5>, micro_kernel<6>,
                                    micro_kernel<7>, micro_kernel<8>, micro_kernel<9>, micro_kernel<10>,
                                    micro_kernel<11>
#endif
};
static_assert(sizeof(kKernels) / sizeof(kKernels[0]) == kMaxRows);
#undef ATTN_GEMM_MAX_ROWS

}  // namespace

void panel_rows(int64_t m, const float* a, int64_t lda, int64_t K, const float* panel, int64_t cols, float* c,
                int64_t ldc, bool accumulate) {
  int64_t i = 0;
  for (; i + kMaxRows <= m; i += kMaxRows)
    micro_kernel<kMaxRows>(K, a + i * lda, lda, panel, c + i * ldc, ldc, cols, accumulate);
  if (i < m) kKernels[m - i](K, a + i * lda, lda, panel, c + i * ldc, ldc, cols, accumulate);
}

void gemm_packed(int64_t m, const float* a, int64_t lda, const Panels& b, int64_t k0, int64_t k1, float* c,
                 int64_t ldc, bool accumulate) {
  // Panel outer, rows inner: a panel (K x 32 floats) stays in L1/L2 while the
  // rows of A stream past it.
  for (int64_t g = 0; g < b.groups; ++g)
    for (int64_t col = k0; col < k1; col += kPanel) {
      const float* panel = b.data + (g * b.blocks + col / kPanel) * b.K * kPanel;
      const int64_t cols = k1 - col < kPanel ? k1 - col : kPanel;
      panel_rows(m, a, lda, b.K, panel, cols, c + g * b.width + col, ldc, accumulate);
    }
}

}  // namespace attn::rnn_gemm::kernels::ATTN_SIMD_ISA
