// Raw compute on tensors: no autograd. The differentiable ops in
// attn/autograd/ops.h call these for both their forward and their backward.
//
// All tensors are contiguous row-major. Functions that return a Tensor allocate
// it from the pool; functions ending in _inplace / taking `out` write into it.
#pragma once
#include "attn/tensor/elementwise_ops.h"  // Binary, Unary
#include "attn/tensor/tensor.h"

namespace attn::kernels {

// ---- elementwise (the ops: elementwise_ops.h) ----
// out = a (op) b with numpy broadcasting. out: broadcast_shapes(a, b).
Tensor binary(Binary op, const Tensor& a, const Tensor& b);
inline Tensor add(const Tensor& a, const Tensor& b) { return binary(Binary::Add, a, b); }
inline Tensor mul(const Tensor& a, const Tensor& b) { return binary(Binary::Mul, a, b); }
// dst += alpha * src (same numel)
void add_inplace(Tensor& dst, const Tensor& src, float alpha = 1.0f);
// out = alpha * x + beta
Tensor affine(const Tensor& x, float alpha, float beta);
// Sums `g` over the axes that broadcasting expanded, giving `shape` (g's shape
// must be a broadcast of `shape`). Returns g itself when shapes already match.
Tensor sum_to(const Tensor& g, const Shape& shape);

// out = op(x) element-wise
Tensor unary(Unary op, const Tensor& x);

// ---- reductions ----
// Sum along `axis`; keepdim keeps it as size 1. [.., n, ..] -> [.., ..]
Tensor sum_axis(const Tensor& x, int axis, bool keepdim);
double sum_all(const Tensor& x);
// Broadcast x (size 1 along `axis` or with that axis removed) back to `shape`.
Tensor expand_to(const Tensor& x, const Shape& shape);

// ---- GEMM (OpenBLAS) ----
// C[M,N] = alpha * op(A) op(B) + beta * C, row-major, transposes passed to BLAS.
// A is [M,K] (or [K,M] when trans_a), B is [K,N] (or [N,K] when trans_b).
void gemm(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, float alpha, const float* A, int64_t lda,
          const float* B, int64_t ldb, float beta, float* C, int64_t ldc);
// Batched: `batch` independent GEMMs with element strides between operands.
// stride 0 broadcasts an operand (e.g. one weight matrix for every batch).
void gemm_batched(bool trans_a, bool trans_b, int64_t batch, int64_t M, int64_t N, int64_t K, float alpha,
                  const float* A, int64_t stride_a, const float* B, int64_t stride_b, float beta, float* C,
                  int64_t stride_c);

// ---- softmax ----
// Softmax / log-softmax over the last axis of x viewed as [rows, n].
// mask: undefined, or a 0/1 tensor broadcastable to x (0 = masked out).
// Max-subtracted; a row with every position masked gives all zeros (softmax)
// and all zeros (log-softmax) rather than NaN.
Tensor softmax_lastdim(const Tensor& x, const Tensor& mask, bool log);
// dx = y * (dy - sum(dy*y)) for softmax; dx = dy - exp(y) * sum(dy) for
// log-softmax (y = the forward output). Masked positions get zero gradient.
Tensor softmax_lastdim_backward(const Tensor& y, const Tensor& dy, const Tensor& mask, bool log);

// ---- layout ----
// out = x with axes permuted: out.shape[i] = x.shape[perm[i]]
Tensor permute(const Tensor& x, const std::vector<int>& perm);
// Concatenate along `axis` (all other axes equal).
Tensor concat(const std::vector<Tensor>& xs, int axis);
// x[..., start:start+length, ...] along `axis` (a copy).
Tensor slice(const Tensor& x, int axis, int64_t start, int64_t length);
// dst[..., start:start+length, ...] += src along `axis`.
void slice_add_inplace(Tensor& dst, const Tensor& src, int axis, int64_t start);
// out[i, :] = table[ids[i], :]; ids are float-encoded integer ids.
// table [num_rows, dim], ids [n...] -> [n..., dim]. Throws on an id out of range.
Tensor gather_rows(const Tensor& table, const Tensor& ids);
// dtable[ids[i], :] += dout[i, :], skipping rows whose id == skip_id (skip_id < 0: none).
void scatter_add_rows(Tensor& dtable, const Tensor& ids, const Tensor& dout, int64_t skip_id);

// Masks x (broadcast) where mask == 0 with `value` (may be -inf).
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);

// ---- images (image.cpp): NCHW planes, a window sliding over [H, W] ----
// A kh x kw window moved by `stride` over an image of [channels, height, width]
// zero-padded by `padding` on every side; out_h/out_w as PyTorch (floor).
struct WindowGeometry {
  int64_t channels, height, width, kh, kw, stride, padding;
  int64_t out_h() const { return (height + 2 * padding - kh) / stride + 1; }
  int64_t out_w() const { return (width + 2 * padding - kw) / stride + 1; }
  int64_t out_pixels() const { return out_h() * out_w(); }
  int64_t patch() const { return channels * kh * kw; }  // rows of the column matrix
};
// Images of one batch chunk laid out for one GEMM: `images` images x of
// [images, channels, height, width] become col [patch, images * out_pixels],
// row (c*kh + i)*kw + j, column n*out_pixels + oh*out_w + ow (zeros where the
// window reads padding). Parallel over (image, channel).
void im2col(const float* x, int64_t images, const WindowGeometry& g, float* col);
// The adjoint of im2col: dx [images, channels, height, width] += col scattered back.
void col2im_add(const float* col, int64_t images, const WindowGeometry& g, float* dx);
// How many images conv2d puts into one GEMM (its column matrix): enough that
// the GEMM has a few thousand columns even when an image has few output pixels
// (an 8x8 map alone gives BLAS a 64-wide product), at most `batch`.
int64_t conv2d_images_per_gemm(int64_t batch, int64_t out_pixels);

}  // namespace attn::kernels
