#include <cmath>
#include <cstring>
#include <stdexcept>

#include "attn/cpu/threading.h"
#include "attn/tensor/kernels.h"

namespace attn::kernels {

Tensor permute(const Tensor& x, const std::vector<int>& perm) {
  int r = x.dim();
  if (int(perm.size()) != r) throw std::invalid_argument("permute: " + std::to_string(perm.size()) + " axes for " + x.shape().str());
  std::vector<bool> seen(r, false);
  std::vector<int64_t> dims(r);
  for (int i = 0; i < r; ++i) {
    int p = perm[i];
    if (p < 0 || p >= r || seen[p]) throw std::invalid_argument("permute: invalid permutation for " + x.shape().str());
    seen[p] = true;
    dims[i] = x.shape()[p];
  }
  Shape os(dims.begin(), dims.end());
  Tensor out = Tensor::empty(os);
  if (out.numel() == 0) return out;
  // input strides, read in output axis order
  std::vector<int64_t> in_stride(r), st(r);
  int64_t s = 1;
  for (int i = r - 1; i >= 0; --i) {
    in_stride[i] = s;
    s *= x.shape()[i];
  }
  for (int i = 0; i < r; ++i) st[i] = in_stride[perm[i]];
  int64_t inner = os.back(), rows = out.numel() / inner, s_last = st[r - 1];
  const float* px = x.data();
  float* po = out.data();
#pragma omp parallel for if (out.numel() > kParallelGrain)
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = 0, rr = row;
    for (int i = r - 2; i >= 0; --i) {
      off += (rr % os[i]) * st[i];
      rr /= os[i];
    }
    float* o = po + row * inner;
    const float* xi = px + off;
    if (s_last == 1) std::memcpy(o, xi, size_t(inner) * sizeof(float));
    else
      for (int64_t i = 0; i < inner; ++i) o[i] = xi[i * s_last];
  }
  return out;
}

namespace {
// x as [outer, n * inner] rows where `n` is the size along axis.
void outer_inner(const Shape& s, int axis, int64_t& outer, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int i = 0; i < axis; ++i) outer *= s[i];
  for (int i = axis + 1; i < s.rank(); ++i) inner *= s[i];
}
}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw std::invalid_argument("concat: no tensors");
  int a = xs[0].shape().normalize_axis(axis);
  Shape os = xs[0].shape();
  int64_t total = 0;
  for (const Tensor& t : xs) {
    if (t.dim() != os.rank()) throw std::invalid_argument("concat: ranks differ: " + os.str() + " and " + t.shape().str());
    for (int i = 0; i < os.rank(); ++i)
      if (i != a && t.shape()[i] != os[i])
        throw std::invalid_argument("concat along axis " + std::to_string(a) + ": " + os.str() + " and " + t.shape().str());
    total += t.shape()[a];
  }
  os[a] = total;
  Tensor out = Tensor::empty(os);
  int64_t outer, inner;
  outer_inner(os, a, outer, inner);
  int64_t start = 0;
  for (const Tensor& t : xs) {
    int64_t w = t.shape()[a] * inner;
    const float* pt = t.data();
    float* po = out.data() + start * inner;
    for (int64_t i = 0; i < outer; ++i) std::memcpy(po + i * total * inner, pt + i * w, size_t(w) * sizeof(float));
    start += t.shape()[a];
  }
  return out;
}

Tensor slice(const Tensor& x, int axis, int64_t start, int64_t length) {
  int a = x.shape().normalize_axis(axis);
  if (start < 0 || length < 0 || start + length > x.shape()[a])
    throw std::invalid_argument("slice: [" + std::to_string(start) + ", " + std::to_string(start + length) +
                                ") along axis " + std::to_string(a) + " of " + x.shape().str());
  Shape os = x.shape();
  os[a] = length;
  Tensor out = Tensor::empty(os);
  int64_t outer, inner;
  outer_inner(x.shape(), a, outer, inner);
  int64_t n = x.shape()[a];
  for (int64_t i = 0; i < outer; ++i)
    std::memcpy(out.data() + i * length * inner, x.data() + (i * n + start) * inner, size_t(length * inner) * sizeof(float));
  return out;
}

void slice_add_inplace(Tensor& dst, const Tensor& src, int axis, int64_t start) {
  int a = dst.shape().normalize_axis(axis);
  int64_t outer, inner;
  outer_inner(dst.shape(), a, outer, inner);
  int64_t n = dst.shape()[a], length = src.shape()[a];
  for (int64_t i = 0; i < outer; ++i) {
    float* d = dst.data() + (i * n + start) * inner;
    const float* s = src.data() + i * length * inner;
    for (int64_t k = 0; k < length * inner; ++k) d[k] += s[k];
  }
}

Tensor gather_rows(const Tensor& table, const Tensor& ids) {
  if (table.dim() != 2) throw std::invalid_argument("gather_rows: table must be [rows, dim], got " + table.shape().str());
  int64_t rows = table.shape()[0], dim = table.shape()[1], n = ids.numel();
  std::vector<int64_t> dims(ids.shape().begin(), ids.shape().end());
  dims.push_back(dim);
  Tensor out = Tensor::empty(Shape(dims.begin(), dims.end()));
  const float* pi = ids.data();
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = int64_t(pi[i]);
    if (id < 0 || id >= rows || float(id) != pi[i])
      throw std::invalid_argument("gather_rows: id " + std::to_string(pi[i]) + " at position " + std::to_string(i) +
                                  " outside [0, " + std::to_string(rows) + ")");
    std::memcpy(out.data() + i * dim, table.data() + id * dim, size_t(dim) * sizeof(float));
  }
  return out;
}

void scatter_add_rows(Tensor& dtable, const Tensor& ids, const Tensor& dout, int64_t skip_id) {
  int64_t dim = dtable.shape()[1], n = ids.numel();
  const float* pi = ids.data();
  for (int64_t i = 0; i < n; ++i) {
    int64_t id = int64_t(pi[i]);
    if (id == skip_id) continue;
    float* d = dtable.data() + id * dim;
    const float* s = dout.data() + i * dim;
#pragma omp simd
    for (int64_t k = 0; k < dim; ++k) d[k] += s[k];
  }
}

}  // namespace attn::kernels
