// Few-row products with a row-major weight (see rows_gemm.h). A block of M
// rows and J outputs keeps M x J vector accumulators: per kLanes-wide slice of
// K it loads J weight vectors (the streamed operand) and M activation vectors
// (L1-resident), then does M x J FMAs. J = 4 for up to 4 rows and J = 2 above
// keep the accumulators, the J weight vectors and one activation vector within
// the 32 (AVX-512) vector registers.
#include "attn/kernels/rows_gemm.h"

#include <algorithm>

#include "attn/simd/vec.h"

// GCC 12 reports the _mm256_undefined_pd() operand inside _mm512_reduce_add_ps
// as uninitialised where it inlines here (the false positive simd/vec.h describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::rows_gemm::ATTN_SIMD_ISA {
namespace {

using namespace simd;

template <int M, int J>
void block(int64_t K, const float* __restrict a, int64_t lda, const float* __restrict w, int64_t ldw,
           float* __restrict c, int64_t ldc, bool accumulate) {
  vf acc[M][J];
#pragma GCC unroll 8
  for (int r = 0; r < M; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) acc[r][j] = zero();
  int64_t k = 0;
  for (; k + kLanes <= K; k += kLanes) {
    vf wv[J];
#pragma GCC unroll 4
    for (int j = 0; j < J; ++j) {
      // W comes from memory (18 MB for rnnsearch: more than this VM's share of
      // L3): fetch the same slice of the next J rows, which the next block
      // reads. Measured on the decoder's weights, 1 row, 2 threads: 17 -> 24-29 GB/s.
      __builtin_prefetch(w + (j + J) * ldw + k);
      wv[j] = load(w + j * ldw + k);
    }
#pragma GCC unroll 8
    for (int r = 0; r < M; ++r) {
      const vf av = load(a + r * lda + k);
#pragma GCC unroll 4
      for (int j = 0; j < J; ++j) acc[r][j] = fmadd(av, wv[j], acc[r][j]);
    }
  }
  for (int r = 0; r < M; ++r)
    for (int j = 0; j < J; ++j) {
      float s = reduce_add(acc[r][j]);
      for (int64_t t = k; t < K; ++t) s += a[r * lda + t] * w[j * ldw + t];
      float& out = c[r * ldc + j];
      out = accumulate ? out + s : s;
    }
}

// M rows, outputs [o0, o1): blocks of J outputs, then single outputs.
template <int M>
void rows(int64_t K, const float* a, int64_t lda, const float* w, int64_t ldw, int64_t o0, int64_t o1, float* c,
          int64_t ldc, bool accumulate) {
  constexpr int J = M <= 4 ? 4 : 2;
  int64_t o = o0;
  for (; o + J <= o1; o += J) block<M, J>(K, a, lda, w + o * ldw, ldw, c + o, ldc, accumulate);
  for (; o < o1; ++o) block<M, 1>(K, a, lda, w + o * ldw, ldw, c + o, ldc, accumulate);
}

using RowsFn = void (*)(int64_t, const float*, int64_t, const float*, int64_t, int64_t, int64_t, float*, int64_t, bool);
constexpr RowsFn kRows[] = {nullptr, rows<1>, rows<2>, rows<3>, rows<4>, rows<5>, rows<6>, rows<7>, rows<8>};
static_assert(sizeof(kRows) / sizeof(kRows[0]) == kMaxRows + 1);

}  // namespace

void gemm_wt(int64_t m, int64_t K, const float* a, int64_t lda, const float* w, int64_t ldw, int64_t o0, int64_t o1,
             float* c, int64_t ldc, bool accumulate) {
  for (int64_t i = 0; i < m; i += kMaxRows) {
    const int64_t mr = std::min(kMaxRows, m - i);
    kRows[mr](K, a + i * lda, lda, w, ldw, o0, o1, c + i * ldc, ldc, accumulate);
  }
}

}  // namespace attn::rows_gemm::ATTN_SIMD_ISA
