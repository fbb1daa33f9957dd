// Differentiable ops: each computes its forward now and, when an input
// requires grad, records its backward on the tape (attn/autograd/node.h).
//
// Shapes are row-major, outermost axis first. Binary elementwise ops follow
// numpy broadcasting; their gradients are summed back to each input's shape.
// Every op here has a finite-difference check in tests/test_gradcheck.cpp,
// enumerated from op_names() so that an op without one fails the suite.
#pragma once
#include <string>
#include <vector>

#include "attn/autograd/node.h"
#include "attn/tensor/random.h"
#include "attn/tensor/tensor.h"

namespace attn {

// ---- elementwise (broadcasting) ----
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
// alpha * x + beta
Tensor affine(const Tensor& x, float alpha, float beta = 0.0f);
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator*(const Tensor& a, float s) { return affine(a, s); }
inline Tensor operator-(const Tensor& a) { return affine(a, -1.0f); }

Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor relu(const Tensor& x);
// GELU, exact (erf) form as PyTorch's default: x * Phi(x), Phi(x) = (1 + erf(x / sqrt 2)) / 2
Tensor gelu(const Tensor& x);

// ---- reductions ----
// [.., n, ..] -> [.., ..] (or [.., 1, ..] with keepdim)
Tensor sum(const Tensor& x, int axis, bool keepdim = false);
Tensor mean(const Tensor& x, int axis, bool keepdim = false);
// all elements -> scalar []
Tensor sum_all(const Tensor& x);
Tensor mean_all(const Tensor& x);

// ---- products ----
// a [..., M, K] (or [..., K, M] when trans_a) times b [..., K, N] (or
// [..., N, K] when trans_b) -> [..., M, N]. Leading (batch) axes of a and b
// must be equal, or b must be 2-D (one matrix applied to every batch entry).
// Transposes go to BLAS as flags; nothing is copied.
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
// y = x W^T + b: x [..., in], weight [out, in], bias [out] or undefined -> [..., out]
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// The activations a fused layer applies (ops_activation.cpp).
enum class Activation {
  ReLU,  // max(0, x)
  GELU,  // exact erf GELU, as gelu()
};
// y = act(x W^T + b), one op ("linear_act"): x [..., in], weight [out, in], bias [out]
// or undefined -> [..., out]. The bias and activation are applied in one pass over
// the GEMM's output, and the backward forms d(pre-activation) in place of a
// separate activation node (saves [..., out] of memory traffic twice). ReLU keeps
// only the output for its backward; GELU keeps the pre-activation.
Tensor linear_act(const Tensor& x, const Tensor& weight, const Tensor& bias, Activation act);

// ---- softmax ----
// Softmax over `axis` (default last); mask: undefined or a 0/1 tensor
// broadcastable to x, 0 = excluded. Max-subtracted; a fully masked row gives
// zeros (and zero gradient), never NaN.
Tensor softmax(const Tensor& x, int axis = -1, const Tensor& mask = Tensor());
Tensor log_softmax(const Tensor& x, int axis = -1, const Tensor& mask = Tensor());

// ---- layout ----
Tensor reshape(const Tensor& x, const Shape& shape);  // shares storage
Tensor permute(const Tensor& x, const std::vector<int>& perm);
Tensor transpose(const Tensor& x, int axis0, int axis1);
Tensor concat(const std::vector<Tensor>& xs, int axis);
// x[..., start:start+length, ...] along axis
Tensor slice(const Tensor& x, int axis, int64_t start, int64_t length);
// Splits x along axis into pieces of the given sizes (summing to the axis size);
// each piece is a differentiable slice.
std::vector<Tensor> split(const Tensor& x, int axis, const std::vector<int64_t>& sizes);
// Replaces elements where mask == 0 (mask broadcasts to x) by `value` (-inf allowed).
Tensor masked_fill(const Tensor& x, const Tensor& mask, float value);

// ---- layers' primitives ----
// table [num_embeddings, dim], ids [...] (float-encoded ids) -> [..., dim].
// Rows for padding_idx (if >= 0) get no gradient.
Tensor embedding(const Tensor& table, const Tensor& ids, int64_t padding_idx = -1);
// Inverted dropout: zeroes each element with probability p and scales the rest
// by 1/(1-p). Identity when !training or p == 0.
Tensor dropout(const Tensor& x, float p, bool training, Rng& rng);
// The mask dropout() multiplies by, n floats into out: 0 with probability p,
// else 1/(1-p), drawn from rng in order (a fused op that draws its masks
// ahead gets the very masks step-by-step dropout() calls would).
void dropout_mask(float* out, int64_t n, float p, Rng& rng);
// Normalises over the last axis: x [..., n], weight [n], bias [n] -> [..., n]
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

// ---- images (ops_image.cpp): [batch, channels, H, W] ----
// 2-D convolution (cross-correlation, as PyTorch's conv2d) with zero padding:
// x [batch, in_ch, H, W], weight [out_ch, in_ch, kh, kw], bias [out_ch] or
// undefined -> [batch, out_ch, (H + 2*padding - kh)/stride + 1, (W + 2*padding - kw)/stride + 1].
// im2col and one BLAS GEMM per chunk of images (kernels::conv2d_images_per_gemm);
// the backward's two GEMMs per chunk give d(weight) and d(x) (the latter only
// when x requires grad, so a network's input image costs no col2im).
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride = 1, int64_t padding = 0);
// Max over each kernel x kernel window moved by stride (0: stride = kernel), no
// padding: x [batch, channels, H, W] -> [batch, channels, (H - kernel)/stride + 1,
// (W - kernel)/stride + 1]. The gradient goes to each window's argmax (the first
// maximum in row-major order, as PyTorch).
Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride = 0);
// Group normalisation (Wu & He 2018): the channels split into `groups` groups,
// each (image, group) normalised over its channels and pixels, then a
// per-channel affine: x [batch, channels, H, W] (any trailing axes),
// weight [channels], bias [channels] -> x's shape. Batch-independent: an image
// gets the same features alone or in any batch (see nn::GroupNorm for why attn
// uses it rather than BatchNorm2d).
Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& weight, const Tensor& bias, float eps = 1e-5f);

struct CrossEntropyOptions {
  int64_t ignore_index = -1;     // targets equal to this contribute nothing (padding)
  float label_smoothing = 0.0f;  // as PyTorch: (1-eps)*nll + eps*mean_over_classes(-log p)
};
// logits [N, V], targets [N] (float-encoded class ids) -> scalar mean over the
// targets that are not ignore_index (0 when all are ignored). Fused
// log-softmax + NLL: never materialises the log-probabilities' gradient twice.
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, const CrossEntropyOptions& opt = {});

namespace autograd {
// Every op name that record() accepts. record() rejects an unknown name, and the
// gradcheck test fails for a name without a finite-difference case.
const std::vector<std::string>& op_names();
}  // namespace autograd

}  // namespace attn
