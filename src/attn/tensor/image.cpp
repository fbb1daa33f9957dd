// im2col / col2im for the convolutions of attn/autograd/ops_image.cpp: a
// convolution becomes one GEMM per chunk of images (kernels.h, "images").
#include <algorithm>

#include "attn/cpu/threading.h"
#include "attn/tensor/kernels.h"

namespace attn::kernels {
namespace {

// Output columns ow in [lo, hi) read an input column iw = ow*stride - padding + j
// inside [0, width); the others read padding.
void valid_range(int64_t j, const WindowGeometry& g, int64_t& lo, int64_t& hi) {
  const int64_t ow_n = g.out_w();
  // smallest ow with ow*stride >= padding - j, largest with ow*stride <= width - 1 + padding - j
  int64_t a = g.padding - j;
  lo = a <= 0 ? 0 : (a + g.stride - 1) / g.stride;
  int64_t b = g.width - 1 + g.padding - j;
  hi = b < 0 ? 0 : b / g.stride + 1;
  lo = std::min(lo, ow_n);
  hi = std::clamp(hi, lo, ow_n);
}

}  // namespace

void im2col(const float* x, int64_t images, const WindowGeometry& g, float* col) {
  const int64_t oh_n = g.out_h(), ow_n = g.out_w(), P = g.out_pixels(), ld = images * P;
  const int64_t plane = g.height * g.width;
#pragma omp parallel for collapse(2) if (ld * g.patch() > kParallelGrain)
  for (int64_t n = 0; n < images; ++n)
    for (int64_t c = 0; c < g.channels; ++c) {
      const float* xp = x + (n * g.channels + c) * plane;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          float* row = col + ((c * g.kh + i) * g.kw + j) * ld + n * P;
          int64_t lo, hi;
          valid_range(j, g, lo, hi);
          for (int64_t oh = 0; oh < oh_n; ++oh) {
            float* dst = row + oh * ow_n;
            const int64_t ih = oh * g.stride - g.padding + i;
            if (ih < 0 || ih >= g.height) {
              std::fill(dst, dst + ow_n, 0.0f);
              continue;
            }
            const int64_t base = ih * g.width - g.padding + j;  // xp[base + ow*stride] = x[ih, ow*stride - padding + j]
            std::fill(dst, dst + lo, 0.0f);
            if (g.stride == 1)
              std::copy(xp + base + lo, xp + base + hi, dst + lo);
            else
              for (int64_t ow = lo; ow < hi; ++ow) dst[ow] = xp[base + ow * g.stride];
            std::fill(dst + hi, dst + ow_n, 0.0f);
          }
        }
    }
}

void col2im_add(const float* col, int64_t images, const WindowGeometry& g, float* dx) {
  const int64_t oh_n = g.out_h(), ow_n = g.out_w(), P = g.out_pixels(), ld = images * P;
  const int64_t plane = g.height * g.width;
  // each (image, channel) plane of dx is written by its own iteration only: no races
#pragma omp parallel for collapse(2) if (ld * g.patch() > kParallelGrain)
  for (int64_t n = 0; n < images; ++n)
    for (int64_t c = 0; c < g.channels; ++c) {
      float* xp = dx + (n * g.channels + c) * plane;
      for (int64_t i = 0; i < g.kh; ++i)
        for (int64_t j = 0; j < g.kw; ++j) {
          const float* row = col + ((c * g.kh + i) * g.kw + j) * ld + n * P;
          int64_t lo, hi;
          valid_range(j, g, lo, hi);
          for (int64_t oh = 0; oh < oh_n; ++oh) {
            const int64_t ih = oh * g.stride - g.padding + i;
            if (ih < 0 || ih >= g.height) continue;
            const float* src = row + oh * ow_n;
            const int64_t base = ih * g.width - g.padding + j;
            for (int64_t ow = lo; ow < hi; ++ow) xp[base + ow * g.stride] += src[ow];
          }
        }
    }
}

int64_t conv2d_images_per_gemm(int64_t batch, int64_t out_pixels) {
  constexpr int64_t kColumns = 4096;
  return std::clamp<int64_t>(kColumns / std::max<int64_t>(out_pixels, 1), 1, std::max<int64_t>(batch, 1));
}

}  // namespace attn::kernels
