#include "attn/autograd/ops_sequence.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace attn {

std::vector<Tensor> unbind0(const Tensor& x) {
  if (!x.defined() || x.dim() < 1) throw std::invalid_argument("unbind0: needs a tensor of rank >= 1");
  const int64_t T = x.size(0);
  Shape row_shape(x.shape().begin() + 1, x.shape().end());
  std::vector<Tensor> outs;
  outs.reserve(size_t(T));
  for (int64_t t = 0; t < T; ++t) outs.push_back(x.narrow0(t, 1).view(row_shape));
  std::vector<Tensor*> out_ptrs;
  for (auto& o : outs) out_ptrs.push_back(&o);
  autograd::record("unbind", {x}, out_ptrs, [xs = x.shape(), T](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    // out_t = x[t]  =>  dx[t] = d(out_t)
    Tensor dx = Tensor::empty(xs);
    const int64_t row = T ? dx.numel() / T : 0;
    for (int64_t t = 0; t < T; ++t) {
      float* dst = dx.data() + t * row;
      if (d[size_t(t)].defined())
        std::memcpy(dst, d[size_t(t)].data(), size_t(row) * sizeof(float));
      else
        std::memset(dst, 0, size_t(row) * sizeof(float));
    }
    return {dx};
  });
  return outs;
}

PaddedRows padded_rows(const std::vector<int64_t>& lengths, int64_t L) {
  PaddedRows r;
  r.lengths = lengths, r.L = L;
  r.lengths_tensor = Tensor::empty({int64_t(lengths.size())});
  r.starts.assign(1, 0);
  for (size_t b = 0; b < lengths.size(); ++b) {
    if (lengths[b] < 0 || lengths[b] > L)
      throw std::invalid_argument("padded_rows: length " + std::to_string(lengths[b]) + " of sentence " +
                                  std::to_string(b) + " outside [0, " + std::to_string(L) + "]");
    r.lengths_tensor.data()[b] = float(lengths[b]);
    r.starts.push_back(r.starts.back() + lengths[b]);
  }
  return r;
}

namespace {

// Floats per position of x [B, L, rest...] (padded) or [N, rest...] (rows), after checking its shape.
int64_t position_size(const char* op, const Tensor& x, const PaddedRows& r, bool padded) {
  const int64_t lead = padded ? 2 : 1;
  const bool ok = x.defined() && x.dim() >= lead &&
                  (padded ? x.size(0) == r.batch() && x.size(1) == r.L : x.size(0) == r.count());
  if (!ok)
    throw std::invalid_argument(std::string(op) + ": x " + (x.defined() ? x.shape().str() : "undefined") +
                                " for " + std::to_string(r.batch()) + " sentences of " + std::to_string(r.count()) +
                                " real positions padded to " + std::to_string(r.L) +
                                (padded ? " (expects [B, L, ...])" : " (expects [N, ...])"));
  int64_t c = 1;
  for (int64_t d = lead; d < x.dim(); ++d) c *= x.size(d);
  return c;
}

// Copies each sentence's real positions between the padded form and the rows;
// to_rows: padded -> rows, else rows -> padded (padding zeroed).
void copy_positions(const PaddedRows& r, int64_t c, const float* from, float* to, bool to_rows) {
  const int64_t B = r.batch();
#pragma omp parallel for schedule(static) if (r.count() * c >= (int64_t(1) << 16))
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = r.lengths[size_t(b)], padded = b * r.L * c, rows = r.starts[size_t(b)] * c;
    if (to_rows) {
      std::memcpy(to + rows, from + padded, size_t(n * c) * sizeof(float));
    } else {
      std::memcpy(to + padded, from + rows, size_t(n * c) * sizeof(float));
      std::memset(to + padded + n * c, 0, size_t((r.L - n) * c) * sizeof(float));
    }
  }
}

}  // namespace

Tensor pack_padded(const Tensor& x, const PaddedRows& r) {
  const int64_t c = position_size("pack_padded", x, r, true);
  Shape s(x.shape().begin() + 1, x.shape().end());  // [L, rest...] -> [N, rest...]
  s[0] = r.count();
  Tensor out = Tensor::empty(s);
  copy_positions(r, c, x.data(), out.data(), true);
  autograd::record("pack_padded", {x}, out, [r](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {unpack_padded(d[0], r)};
  });
  return out;
}

Tensor unpack_padded(const Tensor& x, const PaddedRows& r) {
  const int64_t c = position_size("unpack_padded", x, r, false);
  Shape s{r.batch(), r.L};  // [N, rest...] -> [B, L, rest...]
  for (int d = 1; d < x.dim(); ++d) s.push_back(x.size(d));
  Tensor out = Tensor::empty(s);
  copy_positions(r, c, x.data(), out.data(), false);
  autograd::record("unpack_padded", {x}, out, [r](const std::vector<Tensor>& d) -> std::vector<Tensor> {
    return {pack_padded(d[0], r)};
  });
  return out;
}

}  // namespace attn
