// Packed-weight step GEMM kernels (see rnn_gemm.h). The micro-kernel keeps an
// MR x 32 block of C in 2*MR vector registers, streams the panel's K rows of
// 32 floats, and broadcasts one A element per row and k. MR = 12 with AVX-512
// (24 accumulators + 2 B vectors of the 32 zmm registers), else 6 (12 + 2 of
// 16 registers, as ymm pairs with AVX2). An ISA source (cpu/dispatch.h):
// compiled once per instruction set.
#include "attn/nn/rnn_gemm_kernels.h"

#include "attn/simd/vec.h"  // ATTN_SIMD_ISA

namespace attn::rnn_gemm::kernels::ATTN_SIMD_ISA {
namespace {

// 16 floats; the compiler maps it to one zmm, two ymm or four xmm registers.
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));  // unaligned access to C

#ifdef __AVX512F__
constexpr int kMaxRows = 12;
#else
constexpr int kMaxRows = 6;
#endif

template <int MR>
void micro_kernel(int64_t K, const float* __restrict a, int64_t lda, const float* __restrict panel,
                  float* __restrict c, int64_t ldc, int64_t cols, bool accumulate) {
  v16 acc0[MR], acc1[MR];
#pragma GCC unroll 12
  for (int r = 0; r < MR; ++r) acc0[r] = acc1[r] = v16{};
  for (int64_t k = 0; k < K; ++k) {
    // the panel streams from L2 (64-192 KB): fetch 16 rows ahead (measured best
    // of 4/8/16/32 here: +20% over none; prefetching A's rows as well was worse)
    __builtin_prefetch(panel + (k + 16) * kPanel);
    __builtin_prefetch(panel + (k + 16) * kPanel + 16);
    const v16 b0 = *reinterpret_cast<const v16*>(panel + k * kPanel);
    const v16 b1 = *reinterpret_cast<const v16*>(panel + k * kPanel + 16);
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      const float s = a[r * lda + k];
      acc0[r] += b0 * s;
      acc1[r] += b1 * s;
    }
  }
  if (cols == kPanel) {
#pragma GCC unroll 12
    for (int r = 0; r < MR; ++r) {
      v16u* c0 = reinterpret_cast<v16u*>(c + r * ldc);
      v16u* c1 = reinterpret_cast<v16u*>(c + r * ldc + 16);
      if (accumulate) {
        *c0 = *c0 + acc0[r];
        *c1 = *c1 + acc1[r];
      } else {
        *c0 = acc0[r];
        *c1 = acc1[r];
      }
    }
    return;
  }
  // a group's last, partial panel
  for (int r = 0; r < MR; ++r) {
    alignas(64) float tmp[kPanel];
    *reinterpret_cast<v16*>(tmp) = acc0[r];
    *reinterpret_cast<v16*>(tmp + 16) = acc1[r];
    for (int64_t j = 0; j < cols; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + tmp[j] : tmp[j];
  }
}

using MicroKernel = void (*)(int64_t, const float*, int64_t, const float*, float*, int64_t, int64_t, bool);
constexpr MicroKernel kKernels[] = {nullptr,         micro_kernel<1>, micro_kernel<2>,  micro_kernel<3>, micro_kernel<4>,
                                    micro_kernel<5>, micro_kernel<6>, micro_kernel<7>,  micro_kernel<8>, micro_kernel<9>,
                                    micro_kernel<10>, micro_kernel<11>, micro_kernel<12>};
static_assert(sizeof(kKernels) / sizeof(kKernels[0]) > kMaxRows);

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
