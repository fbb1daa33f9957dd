// The register-blocked GEMM micro-kernel of the fused attention kernels
// (internal header).
//
//   C[m][n] (+)= sum_{k<K} A(m, k) * B[k][n]      m < M, n < N
//
// A is read one scalar at a time (broadcast), at A[m * a_rs + k * a_cs], so any
// layout of A works without packing (K rows, V columns, P^T rows). B and C are
// row-major with N a multiple of simd::kLanes: the callers pad the lane axis
// (query blocks of 64, head dims rounded up) so no load is masked. A tile of
// kMR rows x kNV vectors of C stays in registers for the whole k loop
// (6 x 4 zmm = 24 accumulators with AVX-512, 6 x 2 ymm with AVX2).
#pragma once
#include <cstdint>

#include "attn/simd/vec.h"

// ISA-internal (kernels/dispatch.h): included only by ISA sources, so its inline
// functions live in the namespace of the instruction set being compiled.
namespace attn::attention::detail {
inline namespace ATTN_SIMD_ISA {

constexpr int kMR = 6;
#if defined(__AVX512F__)
constexpr int kNV = 4;
#elif defined(__AVX2__)
constexpr int kNV = 2;
#else
constexpr int kNV = 4;
#endif

template <int MR, int NV>
inline void gemm_tile(int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B, int64_t ldb, float* C,
                      int64_t ldc, bool accumulate) {
  using namespace simd;
  vf c[MR][NV];
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) c[m][v] = accumulate ? load(C + m * ldc + v * kLanes) : zero();
  const float* a = A;
  const float* b = B;
  for (int64_t k = 0; k < K; ++k, a += a_cs, b += ldb) {
    vf bv[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) bv[v] = load(b + v * kLanes);
#pragma GCC unroll 8
    for (int m = 0; m < MR; ++m) {
      vf am = set1(a[m * a_rs]);
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) c[m][v] = fmadd(am, bv[v], c[m][v]);
    }
  }
#pragma GCC unroll 8
  for (int m = 0; m < MR; ++m)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) store(C + m * ldc + v * kLanes, c[m][v]);
}

template <int NV>
inline void gemm_rows(int64_t M, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B, int64_t ldb,
                      float* C, int64_t ldc, bool acc) {
  int64_t m = 0;
  for (; m + kMR <= M; m += kMR) gemm_tile<kMR, NV>(K, A + m * a_rs, a_rs, a_cs, B, ldb, C + m * ldc, ldc, acc);
  const float* a = A + m * a_rs;
  float* c = C + m * ldc;
  switch (M - m) {
    case 5: gemm_tile<5, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, acc); break;
    case 4: gemm_tile<4, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, acc); break;
    case 3: gemm_tile<3, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, acc); break;
    case 2: gemm_tile<2, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, acc); break;
    case 1: gemm_tile<1, NV>(K, a, a_rs, a_cs, B, ldb, c, ldc, acc); break;
    default: break;
  }
}

// C[M, N] (+)= A(M, K) B[K, N]; N % simd::kLanes == 0. accumulate = false
// overwrites C (K may be 0: C becomes 0).
inline void tile_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_rs, int64_t a_cs, const float* B,
                      int64_t ldb, float* C, int64_t ldc, bool accumulate) {
  constexpr int64_t W = simd::kLanes;
  int64_t n = 0;
  for (; n + kNV * W <= N; n += kNV * W) gemm_rows<kNV>(M, K, A, a_rs, a_cs, B + n, ldb, C + n, ldc, accumulate);
  switch ((N - n) / W) {
    case 3: gemm_rows<3>(M, K, A, a_rs, a_cs, B + n, ldb, C + n, ldc, accumulate); break;
    case 2: gemm_rows<2>(M, K, A, a_rs, a_cs, B + n, ldb, C + n, ldc, accumulate); break;
    case 1: gemm_rows<1>(M, K, A, a_rs, a_cs, B + n, ldb, C + n, ldc, accumulate); break;
    default: break;
  }
}

}  // namespace ATTN_SIMD_ISA
}  // namespace attn::attention::detail
