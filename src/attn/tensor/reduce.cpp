#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "attn/cpu/threading.h"
#include "attn/tensor/kernels.h"

namespace attn::kernels {

namespace {
// x viewed as [outer, n, inner] around `axis`.
void split_around(const Shape& s, int axis, int64_t& outer, int64_t& n, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  n = s[axis];
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
}
}  // namespace

Tensor sum_axis(const Tensor& x, int axis, bool keepdim) {
  int a = x.shape().normalize_axis(axis);
  int64_t outer, n, inner;
  split_around(x.shape(), a, outer, n, inner);
  std::vector<int64_t> dims;
  for (int i = 0; i < x.dim(); ++i) {
    if (i != a) dims.push_back(x.shape()[i]);
    else if (keepdim) dims.push_back(1);
  }
  Tensor out = Tensor::zeros(Shape(dims.begin(), dims.end()));
  const float* p = x.data();
  float* o = out.data();
  // Threads take (outer index, block of kBlock inner columns) pairs, so a column
  // sum (axis 0 of a matrix: outer = 1), e.g. a bias gradient, splits too. Each
  // output still adds its n inputs in order j = 0, 1, ...: the result does not
  // depend on the number of threads.
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel for collapse(2) if (x.numel() > kParallelGrain)
  for (int64_t i = 0; i < outer; ++i) {
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t k0 = blk * kBlock, k1 = std::min(inner, k0 + kBlock);
      float* oi = o + i * inner;
      for (int64_t j = 0; j < n; ++j) {
        const float* pj = p + (i * n + j) * inner;
#pragma omp simd
        for (int64_t k = k0; k < k1; ++k) oi[k] += pj[k];
      }
    }
  }
  return out;
}

double sum_all(const Tensor& x) {
  const float* p = x.data();
  int64_t n = x.numel();
  double acc = 0;
#pragma omp parallel for reduction(+ : acc) if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) acc += p[i];
  return acc;
}

}  // namespace attn::kernels
