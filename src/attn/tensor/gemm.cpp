#include <omp.h>

#include <stdexcept>

#include "attn/cpu/blas.h"
#include "attn/tensor/kernels.h"

namespace attn::kernels {
namespace {

// BLAS reads y when beta != 0 only; with beta == 0 OpenBLAS scales y by 0 first,
// which keeps a NaN left in pooled (uninitialised) memory. Zero it instead.
void zero_strided(float* y, int64_t n, int64_t inc) {
  for (int64_t i = 0; i < n; ++i) y[i * inc] = 0.0f;
}

// A product with one output row (M == 1) or one output column (N == 1) is a
// matrix-vector product. OpenBLAS 0.3.21 runs it as a full GEMM that packs the
// whole matrix operand on every call (35% of a batch-1 decoder step); sgemv
// streams the matrix once.
void gemv_route(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
                const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 1) {
    // c[0, :] = alpha x op(B) + beta c, x = op(A)[0, :] (a row of A, or a column when trans_a)
    const int64_t incx = trans_a ? lda : 1;
    if (beta == 0.0f) zero_strided(C, N, 1);
    if (trans_b)  // B is [N, K]: c = B x
      cpu::blas_sgemv(false, N, K, alpha, B, ldb, A, incx, beta, C, 1);
    else  // B is [K, N]: c = B^T x
      cpu::blas_sgemv(true, K, N, alpha, B, ldb, A, incx, beta, C, 1);
    return;
  }
  // N == 1: c[:, 0] (stride ldc) = alpha op(A) x + beta c, x = op(B)[:, 0]
  const int64_t incx = trans_b ? 1 : ldb;
  if (beta == 0.0f) zero_strided(C, M, ldc);
  if (trans_a)  // A is [K, M]: c = A^T x
    cpu::blas_sgemv(true, K, M, alpha, A, lda, B, incx, beta, C, ldc);
  else  // A is [M, K]: c = A x
    cpu::blas_sgemv(false, M, K, alpha, A, lda, B, incx, beta, C, ldc);
}

}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  if (M == 0 || N == 0) return;
  if (K == 0) {  // BLAS leaves C untouched only when beta == 1; define the empty sum as 0.
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    return;
  }
  if (M == 1 || N == 1) return gemv_route(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
  cpu::blas_sgemm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
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
