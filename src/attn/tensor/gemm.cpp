#include <cblas.h>
#include <omp.h>

#include <stdexcept>

#include "attn/tensor/kernels.h"

namespace attn::kernels {

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS leaves C untouched only when beta == 1; define the empty sum as 0.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, int(M), int(N),
              int(K), alpha, A, int(lda), B, int(ldb), beta, C, int(ldc));
}

void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t stride_a, const float* B, int64_t stride_b, float beta, float* C,
                  int64_t stride_c) {
  int64_t lda = trans_a ? M : K, ldb = trans_b ? K : N;
  if (stride_c == 0 && batch > 1) throw std::invalid_argument("gemm_batched: output stride 0");
  // Small matrices: one BLAS call each is dominated by call overhead and BLAS's
  // own threading cannot help; run the batch across our threads instead (BLAS
  // sees omp_in_parallel and stays single-threaded inside).
  bool small = M * N * K < 64 * 64 * 64;
  if (small && batch > 1) {
#pragma omp parallel for
    for (int64_t b = 0; b < batch; ++b)
      gemm(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta, C + b * stride_c, N);
  } else {
    for (int64_t b = 0; b < batch; ++b)
      gemm(trans_a, trans_b, M, N, K, alpha, A + b * stride_a, lda, B + b * stride_b, ldb, beta, C + b * stride_c, N);
  }
}

}  // namespace attn::kernels
