// Image ops over [batch, channels, H, W]: conv2d (im2col + BLAS), max_pool2d,
// group_norm. Raw im2col / col2im live in tensor/image.cpp.
#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/cpu/threading.h"
#include "attn/tensor/kernels.h"

namespace attn {
namespace {

std::string str(int64_t v) { return std::to_string(v); }

kernels::WindowGeometry conv_geometry(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t padding) {
  if (x.dim() != 4 || w.dim() != 4)
    throw std::invalid_argument("conv2d: input " + shape_str(x) + " and weight " + shape_str(w) +
                                " (expects [batch, in_ch, H, W] and [out_ch, in_ch, kh, kw])");
  if (w.size(1) != x.size(1))
    throw std::invalid_argument("conv2d: weight " + w.shape().str() + " has " + str(w.size(1)) + " input channels, input " +
                                x.shape().str() + " has " + str(x.size(1)));
  if (b.defined() && (b.dim() != 1 || b.size(0) != w.size(0)))
    throw std::invalid_argument("conv2d: bias " + b.shape().str() + " for " + str(w.size(0)) + " output channels");
  if (stride < 1 || padding < 0)
    throw std::invalid_argument("conv2d: stride " + str(stride) + " (>= 1) / padding " + str(padding) + " (>= 0)");
  kernels::WindowGeometry g{x.size(1), x.size(2), x.size(3), w.size(2), w.size(3), stride, padding};
  if (g.height + 2 * padding < g.kh || g.width + 2 * padding < g.kw)
    throw std::invalid_argument("conv2d: kernel " + str(g.kh) + "x" + str(g.kw) + " larger than the padded input " +
                                x.shape().str() + " (padding " + str(padding) + ")");
  return g;
}

// y [out_ch, n*P] (one chunk's GEMM result) -> out[b0 + i, :, :] (+ bias), and back.
void chunk_to_images(const float* y, int64_t out_ch, int64_t n, int64_t P, const float* bias, float* out) {
#pragma omp parallel for collapse(2) if (out_ch * n * P > kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < out_ch; ++c) {
      const float* src = y + c * n * P + i * P;
      float* dst = out + (i * out_ch + c) * P;
      const float add = bias ? bias[c] : 0.0f;
      for (int64_t p = 0; p < P; ++p) dst[p] = src[p] + add;
    }
}
// y [out_ch, P] += bias per channel
void add_channel_bias(float* y, const float* bias, int64_t out_ch, int64_t P) {
#pragma omp parallel for if (out_ch * P > kParallelGrain)
  for (int64_t c = 0; c < out_ch; ++c)
    for (int64_t p = 0; p < P; ++p) y[c * P + p] += bias[c];
}
void images_to_chunk(const float* d, int64_t out_ch, int64_t n, int64_t P, float* y) {
#pragma omp parallel for collapse(2) if (out_ch * n * P > kParallelGrain)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < out_ch; ++c) std::copy(d + (i * out_ch + c) * P, d + (i * out_ch + c + 1) * P, y + c * n * P + i * P);
}

// d(bias)[c] = sum over images and pixels of dy[:, c, :]
Tensor conv_bias_grad(const Tensor& dy, int64_t out_ch, int64_t P) {
  const int64_t B = dy.size(0);
  Tensor db = Tensor::empty({out_ch});
  const float* pd = dy.data();
#pragma omp parallel for if (dy.numel() > kParallelGrain)
  for (int64_t c = 0; c < out_ch; ++c) {
    double s = 0;
    for (int64_t b = 0; b < B; ++b) {
      const float* row = pd + (b * out_ch + c) * P;
      float part = 0;
      for (int64_t p = 0; p < P; ++p) part += row[p];
      s += part;
    }
    db.data()[c] = float(s);
  }
  return db;
}

// The backward of conv2d: per chunk, dW += dY col^T, dcol = W^T dY, dx += col2im(dcol).
std::vector<Tensor> conv2d_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const kernels::WindowGeometry& g,
                                    bool need_dx, bool need_dw, bool has_bias) {
  const int64_t B = x.size(0), O = w.size(0), K = g.patch(), P = g.out_pixels();
  const int64_t chunk = kernels::conv2d_images_per_gemm(B, P);
  const int64_t in_plane = g.channels * g.height * g.width;
  Tensor dx = need_dx ? Tensor::zeros(x.shape()) : Tensor();
  Tensor dw = need_dw ? Tensor::zeros(w.shape()) : Tensor();
  Tensor col = Tensor::empty({K, chunk * P});  // col, then reused for dcol
  Tensor ybuf = chunk > 1 ? Tensor::empty({O, chunk * P}) : Tensor();
  for (int64_t b0 = 0; b0 < B; b0 += chunk) {
    const int64_t n = std::min(chunk, B - b0), N = n * P;
    const float* dyc = dy.data() + b0 * O * P;  // one image: already [out_ch, P]
    if (n > 1) {
      images_to_chunk(dyc, O, n, P, ybuf.data());
      dyc = ybuf.data();
    }
    if (need_dw) {
      kernels::im2col(x.data() + b0 * in_plane, n, g, col.data());
      kernels::gemm(false, true, O, K, N, 1.0f, dyc, N, col.data(), N, 1.0f, dw.data(), K);
    }
    if (need_dx) {
      kernels::gemm(true, false, K, N, O, 1.0f, w.data(), K, dyc, N, 0.0f, col.data(), N);
      kernels::col2im_add(col.data(), n, g, dx.data() + b0 * in_plane);
    }
  }
  return {dx, dw, has_bias ? conv_bias_grad(dy, O, P) : Tensor()};
}

}  // namespace

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, int64_t stride, int64_t padding) {
  const kernels::WindowGeometry g = conv_geometry(x, w, b, stride, padding);
  const int64_t B = x.size(0), O = w.size(0), K = g.patch(), P = g.out_pixels();
  const int64_t chunk = kernels::conv2d_images_per_gemm(B, P);
  const int64_t in_plane = g.channels * g.height * g.width;
  Tensor out = Tensor::empty({B, O, g.out_h(), g.out_w()});
  Tensor col = Tensor::empty({K, chunk * P});
  Tensor ybuf = chunk > 1 ? Tensor::empty({O, chunk * P}) : Tensor();
  for (int64_t b0 = 0; b0 < B; b0 += chunk) {
    const int64_t n = std::min(chunk, B - b0), N = n * P;
    kernels::im2col(x.data() + b0 * in_plane, n, g, col.data());
    float* dst = out.data() + b0 * O * P;
    if (n == 1) {  // one image's [out_ch, P] is already the output's layout: no copy
      kernels::gemm(false, false, O, N, K, 1.0f, w.data(), K, col.data(), N, 0.0f, dst, N);
      if (b.defined()) add_channel_bias(dst, b.data(), O, P);
    } else {
      kernels::gemm(false, false, O, N, K, 1.0f, w.data(), K, col.data(), N, 0.0f, ybuf.data(), N);
      chunk_to_images(ybuf.data(), O, n, P, b.defined() ? b.data() : nullptr, dst);
    }
  }
  const bool need_dx = x.requires_grad(), need_dw = w.requires_grad();
  autograd::record("conv2d", {x, w, b}, out,
                   [x = x.detach(), w = w.detach(), g, need_dx, need_dw, has_bias = b.defined()](
                       const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     return conv2d_backward(d[0], x, w, g, need_dx, need_dw, has_bias);
                   });
  return out;
}

Tensor max_pool2d(const Tensor& x, int64_t kernel, int64_t stride) {
  if (stride == 0) stride = kernel;
  if (x.dim() != 4 || kernel < 1 || stride < 1 || x.size(2) < kernel || x.size(3) < kernel)
    throw std::invalid_argument("max_pool2d: input " + shape_str(x) + ", kernel " + str(kernel) + ", stride " + str(stride) +
                                " (expects [batch, channels, H, W] with H, W >= kernel >= 1, stride >= 1)");
  const kernels::WindowGeometry g{x.size(1), x.size(2), x.size(3), kernel, kernel, stride, 0};
  const int64_t planes = x.size(0) * x.size(1), H = g.height, W = g.width, OH = g.out_h(), OW = g.out_w();
  Tensor out = Tensor::empty({x.size(0), x.size(1), OH, OW});
  // the argmax of each output within its input plane, for the backward
  auto argmax = std::make_shared<std::vector<int32_t>>(size_t(out.numel()));
  const float* px = x.data();
  float* po = out.data();
  int32_t* pa = argmax->data();
#pragma omp parallel for if (x.numel() > kParallelGrain)
  for (int64_t q = 0; q < planes; ++q) {
    const float* xp = px + q * H * W;
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t best = oh * stride * W + ow * stride;
        for (int64_t i = 0; i < kernel; ++i)
          for (int64_t j = 0; j < kernel; ++j) {
            const int64_t at = (oh * stride + i) * W + ow * stride + j;
            // strictly greater keeps the first maximum; a NaN wins and stays (as PyTorch)
            if (xp[at] > xp[best] || (std::isnan(xp[at]) && !std::isnan(xp[best]))) best = at;
          }
        const int64_t o = (q * OH + oh) * OW + ow;
        po[o] = xp[best];
        pa[o] = int32_t(best);
      }
  }
  autograd::record("max_pool2d", {x}, out,
                   [argmax, xs = x.shape(), planes, HW = H * W, OHW = OH * OW](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     Tensor dx = Tensor::zeros(xs);
                     const float* pd = d[0].data();
                     const int32_t* pa = argmax->data();
                     float* pdx = dx.data();
#pragma omp parallel for if (planes * HW > kParallelGrain)
                     for (int64_t q = 0; q < planes; ++q)  // overlapping windows of one plane stay on one thread
                       for (int64_t o = q * OHW; o < (q + 1) * OHW; ++o) pdx[q * HW + pa[o]] += pd[o];
                     return {dx};
                   });
  return out;
}

namespace {

// group_norm's backward. Per row (image, group) of n = cpg * S elements:
// dxhat = dy * w[c]; dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat));
// dw[c] = sum over images and pixels of dy * xhat, db[c] = sum of dy.
std::vector<Tensor> group_norm_backward(const Tensor& dy, const Tensor& xhat, const Tensor& rstd, const Tensor& w,
                                        int64_t B, int64_t C, int64_t G, int64_t S) {
  const int64_t cpg = C / G, n = cpg * S;
  Tensor dx = Tensor::empty(xhat.shape());
  std::vector<double> part_w(size_t(B * C)), part_b(size_t(B * C));  // per (image, channel), summed over images below
  const float *pd = dy.data(), *ph = xhat.data(), *pr = rstd.data(), *pw = w.data();
  float* pdx = dx.data();
#pragma omp parallel for if (xhat.numel() > kParallelGrain)
  for (int64_t r = 0; r < B * G; ++r) {
    const float *dr = pd + r * n, *hr = ph + r * n;
    const int64_t c0 = (r % G) * cpg, bc0 = (r / G) * C + c0;
    double m1 = 0, m2 = 0;
    for (int64_t k = 0; k < cpg; ++k) {
      double sw = 0, sb = 0;
      for (int64_t s = k * S; s < (k + 1) * S; ++s) {
        sw += double(dr[s]) * hr[s];
        sb += dr[s];
      }
      part_w[size_t(bc0 + k)] = sw;
      part_b[size_t(bc0 + k)] = sb;
      m1 += sb * pw[c0 + k];  // sum of dxhat over this channel
      m2 += sw * pw[c0 + k];  // sum of dxhat * xhat
    }
    m1 /= double(n);
    m2 /= double(n);
    for (int64_t k = 0; k < cpg; ++k) {
      const double wk = pw[c0 + k];
      for (int64_t s = k * S; s < (k + 1) * S; ++s) pdx[r * n + s] = float(pr[r] * (double(dr[s]) * wk - m1 - hr[s] * m2));
    }
  }
  Tensor dw = Tensor::empty({C}), db = Tensor::empty({C});
  for (int64_t c = 0; c < C; ++c) {
    double sw = 0, sb = 0;
    for (int64_t b = 0; b < B; ++b) {
      sw += part_w[size_t(b * C + c)];
      sb += part_b[size_t(b * C + c)];
    }
    dw.data()[c] = float(sw);
    db.data()[c] = float(sb);
  }
  return {dx, dw, db};
}

}  // namespace

Tensor group_norm(const Tensor& x, int64_t groups, const Tensor& w, const Tensor& b, float eps) {
  if (x.dim() < 2 || groups < 1 || x.size(1) % groups != 0)
    throw std::invalid_argument("group_norm: input " + shape_str(x) + " with " + str(groups) +
                                " groups (expects [batch, channels, ...] with channels divisible by groups)");
  const int64_t B = x.size(0), C = x.size(1), G = groups, S = B * C != 0 ? x.numel() / (B * C) : 0;
  if (w.numel() != C || b.numel() != C || w.dim() != 1 || b.dim() != 1)
    throw std::invalid_argument("group_norm: weight " + shape_str(w) + " / bias " + shape_str(b) + " for " + str(C) + " channels");
  const int64_t cpg = C / G, n = cpg * S;
  Tensor out = Tensor::empty(x.shape());
  Tensor xhat = Tensor::empty(x.shape());  // saved for backward
  Tensor rstd = Tensor::empty({B * G});
  const float *px = x.data(), *pw = w.data(), *pb = b.data();
  float *po = out.data(), *ph = xhat.data(), *pr = rstd.data();
#pragma omp parallel for if (x.numel() > kParallelGrain)
  for (int64_t r = 0; r < B * G; ++r) {
    const float* xr = px + r * n;
    double mu = 0, var = 0;  // double: as layer_norm, a row with a large mean cancels
    for (int64_t i = 0; i < n; ++i) mu += xr[i];
    mu /= double(n);
    for (int64_t i = 0; i < n; ++i) var += (xr[i] - mu) * (xr[i] - mu);
    var /= double(n);
    const float rs = float(1.0 / std::sqrt(var + double(eps)));
    pr[r] = rs;
    const int64_t c0 = (r % G) * cpg;
    for (int64_t k = 0; k < cpg; ++k)
      for (int64_t s = k * S; s < (k + 1) * S; ++s) {
        const float h = float((xr[s] - mu) * rs);
        ph[r * n + s] = h;
        po[r * n + s] = h * pw[c0 + k] + pb[c0 + k];
      }
  }
  autograd::record("group_norm", {x, w, b}, out,
                   [xhat, rstd, w = w.detach(), B, C, G, S](const std::vector<Tensor>& d) -> std::vector<Tensor> {
                     return group_norm_backward(d[0], xhat, rstd, w, B, C, G, S);
                   });
  return out;
}

}  // namespace attn
