// Array loops of the element-wise kernels (see kernels/elementwise.h). An ISA
// source (kernels/dispatch.h): compiled once per instruction set. The operations
// are functors, so each loop is compiled (and vectorised) per operation.
#include "attn/kernels/elementwise.h"

#include "attn/cpu/threading.h"
#include "attn/simd/math.h"

namespace attn::kernels::elementwise::ATTN_SIMD_ISA {
namespace {

// Offset of the start of output row `row` (of dims[rank-1] elements) in an
// operand with strides st (broadcast.h's row_offset).
int64_t row_offset(int64_t row, const Rows& s, const int64_t* st) {
  int64_t off = 0;
  for (int i = s.rank - 2; i >= 0; --i) {
    int64_t idx = row % s.dims[i];
    row /= s.dims[i];
    off += idx * st[i];
  }
  return off;
}

template <class F>
void binary_loop(const float* a, int64_t sa, const float* b, int64_t sb, float* o, int64_t n, F f) {
  // sa / sb are 1 (contiguous) or 0 (one value broadcast along the row)
  if (sa == 1 && sb == 1) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
  } else if (sa == 1) {
    float bv = b[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], bv);
  } else if (sb == 1) {
    float av = a[0];
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) o[i] = f(av, b[i]);
  } else {
    float v = f(a[0], b[0]);
    for (int64_t i = 0; i < n; ++i) o[i] = v;
  }
}

template <class F>
void binary_same(const float* a, const float* b, float* o, int64_t n, F f) {
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) o[i] = f(a[i], b[i]);
}

template <class F>
void binary_broadcast(const float* a, const float* b, float* o, const Rows& s, F f) {
  const int last = s.rank - 1;
  int64_t total = 1;
  for (int i = 0; i < s.rank; ++i) total *= s.dims[i];
  const int64_t inner = s.dims[last], rows = total / (inner ? inner : 1);
#pragma omp parallel for if (total > kParallelGrain)
  for (int64_t r = 0; r < rows; ++r)
    binary_loop(a + row_offset(r, s, s.st_a), s.st_a[last], b + row_offset(r, s, s.st_b), s.st_b[last],
                o + r * inner, inner, f);
}

template <class F>
void unary_loop(const float* x, float* o, int64_t n, F f) {
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) o[i] = f(x[i]);
}

// The operations, as functors the loops above are instantiated with
struct Add {
  float operator()(float x, float y) const { return x + y; }
};
struct Sub {
  float operator()(float x, float y) const { return x - y; }
};
struct Mul {
  float operator()(float x, float y) const { return x * y; }
};
struct Div {
  float operator()(float x, float y) const { return x / y; }
};

}  // namespace

void binary(Binary op, const float* a, const float* b, float* out, int64_t n) {
  switch (op) {
    case Binary::Add: return binary_same(a, b, out, n, Add{});
    case Binary::Sub: return binary_same(a, b, out, n, Sub{});
    case Binary::Mul: return binary_same(a, b, out, n, Mul{});
    case Binary::Div: return binary_same(a, b, out, n, Div{});
  }
}

void binary_rows(Binary op, const float* a, const float* b, float* out, const Rows& rows) {
  switch (op) {
    case Binary::Add: return binary_broadcast(a, b, out, rows, Add{});
    case Binary::Sub: return binary_broadcast(a, b, out, rows, Sub{});
    case Binary::Mul: return binary_broadcast(a, b, out, rows, Mul{});
    case Binary::Div: return binary_broadcast(a, b, out, rows, Div{});
  }
}

void unary(Unary op, const float* x, float* out, int64_t n) {
  switch (op) {
    case Unary::Exp: return unary_loop(x, out, n, [](float v) { return __builtin_expf(v); });
    case Unary::Log: return unary_loop(x, out, n, [](float v) { return __builtin_logf(v); });
    // vectorised Cephes forms (~3 ulp, simd/math.h); NaN passes through as libm's would
    case Unary::Tanh: return unary_loop(x, out, n, [](float v) { return v != v ? v : simd::tanh(v); });
    case Unary::Sigmoid: return unary_loop(x, out, n, [](float v) { return v != v ? v : simd::sigmoid(v); });
    case Unary::Relu: return unary_loop(x, out, n, [](float v) { return v > 0 ? v : 0.0f; });
    case Unary::Sqrt: return unary_loop(x, out, n, [](float v) { return __builtin_sqrtf(v); });
  }
}

void add_scaled(float* dst, const float* src, float alpha, int64_t n) {
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) dst[i] += alpha * src[i];
}

void affine(const float* x, float* out, int64_t n, float alpha, float beta) {
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = alpha * x[i] + beta;
}

void sum_rows_to(const float* g, float* out, const Rows& s) {
  const int last = s.rank - 1;
  int64_t total = 1;
  for (int i = 0; i < s.rank; ++i) total *= s.dims[i];
  const int64_t inner = s.dims[last], rows = total / (inner ? inner : 1), s_last = s.st_a[last];
  // Serial over rows: different rows may add into the same output row.
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + row_offset(r, s, s.st_a);
    const float* gr = g + r * inner;
    if (s_last == 1) {
#pragma omp simd
      for (int64_t i = 0; i < inner; ++i) o[i] += gr[i];
    } else {
      float acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t i = 0; i < inner; ++i) acc += gr[i];
      o[0] += acc;
    }
  }
}

void masked_fill(const float* x, const float* mask, float value, float* out, int64_t n) {
#pragma omp parallel for simd if (n > kParallelGrain)
  for (int64_t i = 0; i < n; ++i) out[i] = mask[i] != 0.0f ? x[i] : value;
}

}  // namespace attn::kernels::elementwise::ATTN_SIMD_ISA
