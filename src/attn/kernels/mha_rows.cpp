// Multi-head attention rows (see kernels/mha_rows.h). An ISA source: compiled
// once per instruction set; no std:: function.
#include "attn/kernels/mha_rows.h"

#include "attn/simd/math.h"

// GCC 12 reports the _mm256_undefined_pd() operand inside _mm512_reduce_add_ps
// as uninitialised where it inlines here (the false positive simd/vec.h describes).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace attn::kernels::mha::ATTN_SIMD_ISA {
namespace {

using namespace simd;

// vectors of the context kept in registers at once (of 32 zmm; of 16 ymm)
#if defined(__AVX512F__)
constexpr int kBlock = 16;
#else
constexpr int kBlock = 8;
#endif

inline int64_t pos(const HeadRows& r, int64_t j) { return r.offsets ? r.offsets[j] : j * r.pos_stride; }

// Fetches position j's rows of every head into the cache (j < n). A row's
// positions lie far apart in the search's cache (the slots of all rows
// between them), so the hardware prefetchers do not see them coming.
constexpr int64_t kAhead = 6;  // positions fetched ahead
inline void prefetch_position(const HeadRows& r, const float* base, int64_t j) {
  const float* x = base + pos(r, j);
  for (int64_t h = 0; h < r.H; ++h)
    for (int64_t d = 0; d < r.hd; d += 64 / int64_t(sizeof(float))) __builtin_prefetch(x + h * r.head_stride + d);
}

// p[h, j] = q_h . key_{h,j}: position outer, heads inner, so that a position's
// keys are read together; two positions at a time for independent chains
void scores(const HeadRows& r) {
  const int64_t vec = r.hd / kLanes * kLanes;
  for (int64_t j = 0; j < kAhead && j < r.n; ++j) prefetch_position(r, r.keys, j);
  for (int64_t j = 0; j < r.n; j += 2) {
    for (int64_t f = j + kAhead; f < j + kAhead + 2 && f < r.n; ++f) prefetch_position(r, r.keys, f);
    const bool two = j + 1 < r.n;
    const float* k0 = r.keys + pos(r, j);
    const float* k1 = two ? r.keys + pos(r, j + 1) : k0;
    for (int64_t h = 0; h < r.H; ++h) {
      const float *q = r.q + h * r.hd, *a = k0 + h * r.head_stride, *b = k1 + h * r.head_stride;
      vf s0 = zero(), s1 = zero();
      for (int64_t d = 0; d < vec; d += kLanes) {
        const vf qd = load(q + d);
        s0 = fmadd(qd, load(a + d), s0);
        s1 = fmadd(qd, load(b + d), s1);
      }
      float x0 = reduce_add(s0), x1 = reduce_add(s1);
      for (int64_t d = vec; d < r.hd; ++d) x0 += q[d] * a[d], x1 += q[d] * b[d];
      r.p[h * r.ldp + j] = x0;
      if (two) r.p[h * r.ldp + j + 1] = x1;
    }
  }
}

// each head's row of p: softmax over its n scores, max-subtracted
void softmax(const HeadRows& r) {
  for (int64_t h = 0; h < r.H; ++h) {
    float* a = r.p + h * r.ldp;
    const float mx = max_of(a, r.n);
    const vf vmx = set1(mx);
    vf vsum = zero();
    int64_t j = 0;
    for (; j + kLanes <= r.n; j += kLanes) {
      const vf e = simd::exp(sub(load(a + j), vmx));
      store(a + j, e);
      vsum = add(vsum, e);
    }
    float sum = reduce_add(vsum);
    for (; j < r.n; ++j) sum += (a[j] = simd::exp(a[j] - mx));
    const float inv = 1.0f / sum;
    for (j = 0; j < r.n; ++j) a[j] *= inv;
  }
}

// ctx[h, :] = sum_j p[h, j] value_{h,j}: kBlock vectors of the context at a
// time in registers, position outer
template <int NV>
void context_block(const HeadRows& r, int64_t d0) {
  const float* w[NV];  // the weights of the head each vector belongs to
  int64_t at[NV];      // the vector's first float within a position's values
  for (int v = 0; v < NV; ++v) {
    const int64_t d = d0 + v * kLanes, h = d / r.hd;
    w[v] = r.p + h * r.ldp, at[v] = h * r.head_stride + d % r.hd;
  }
  vf acc[NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) acc[v] = zero();
  if (d0 == 0)
    for (int64_t j = 0; j < kAhead && j < r.n; ++j) prefetch_position(r, r.values, j);
  for (int64_t j = 0; j < r.n; ++j) {
    if (d0 == 0 && j + kAhead < r.n) prefetch_position(r, r.values, j + kAhead);
    const float* x = r.values + pos(r, j);
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[v] = fmadd(set1(w[v][j]), load(x + at[v]), acc[v]);
  }
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) {
    const int64_t d = d0 + v * kLanes;
    store(r.ctx + d, acc[v]);
  }
}

void context(const HeadRows& r) {
  // vectors never straddle two heads: hd a multiple of kLanes (else the scalar tail below)
  const int64_t E = r.H * r.hd, vec = r.hd % kLanes == 0 ? E : 0;
  int64_t d0 = 0;
  for (; d0 + kBlock * kLanes <= vec; d0 += kBlock * kLanes) context_block<kBlock>(r, d0);
  for (; d0 < vec; d0 += kLanes) context_block<1>(r, d0);
  for (int64_t d = vec; d < E; ++d) {
    const int64_t h = d / r.hd, at = h * r.head_stride + d % r.hd;
    float s = 0.0f;
    for (int64_t j = 0; j < r.n; ++j) s += r.p[h * r.ldp + j] * r.values[pos(r, j) + at];
    r.ctx[d] = s;
  }
}

}  // namespace

void attend(const HeadRows& r) {
  scores(r);
  softmax(r);
  context(r);
}

}  // namespace attn::kernels::mha::ATTN_SIMD_ISA
