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
constexpr int64_t kAhead = 8;  // positions fetched ahead
inline void prefetch_position(const HeadRows& r, const float* base, int64_t j) {
  const float* x = base + pos(r, j);
  for (int64_t h = 0; h < r.H; ++h)
    for (int64_t d = 0; d < r.hd; d += 64 / int64_t(sizeof(float))) __builtin_prefetch(x + h * r.head_stride + d);
}

// p[h, j] = q_h . key_{h,j} for positions j0 .. j0 + P - 1 (P = 1 or 4)
template <int P>
void score_positions(const HeadRows& r, int64_t j0) {
  const int64_t vec = r.hd / kLanes * kLanes;
  const float* k[P];
  for (int i = 0; i < P; ++i) k[i] = r.keys + pos(r, j0 + i);
  for (int64_t h = 0; h < r.H; ++h) {
    const float* q = r.q + h * r.hd;
    const int64_t at = h * r.head_stride;
    vf s[P];
#pragma GCC unroll 4
    for (int i = 0; i < P; ++i) s[i] = zero();
    for (int64_t d = 0; d < vec; d += kLanes) {
      const vf qd = load(q + d);
#pragma GCC unroll 4
      for (int i = 0; i < P; ++i) s[i] = fmadd(qd, load(k[i] + at + d), s[i]);
    }
    float* out = r.p + h * r.ldp + j0;
    if constexpr (P == 4)
      reduce_add4(s[0], s[1], s[2], s[3], out);
    else
      out[0] = reduce_add(s[0]);
    for (int i = 0; i < P; ++i)
      for (int64_t d = vec; d < r.hd; ++d) out[i] += q[d] * k[i][at + d];
  }
}

// every position's scores: position outer, heads inner, so that a position's
// keys are read together; four positions at a time, for four independent
// chains of products and one horizontal reduction for the four (two at a time
// with a reduction each before: attention was 9.6% of a greedy batch-64
// search on Zen 3, 7.9% after, perf 2026-11-29)
void scores(const HeadRows& r) {
  for (int64_t j = 0; j < kAhead && j < r.n; ++j) prefetch_position(r, r.keys, j);
  int64_t j = 0;
  for (; j + 4 <= r.n; j += 4) {
    for (int64_t f = j + kAhead; f < j + kAhead + 4 && f < r.n; ++f) prefetch_position(r, r.keys, f);
    score_positions<4>(r, j);
  }
  for (; j < r.n; ++j) score_positions<1>(r, j);
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

// ctx[h, :] = sum_j p[h, j] value_{h,j}: NV vectors of the context at a time
// in registers, position outer. VPH: vectors per head when a head's values are
// whole vectors (one weight broadcast per head and position: on AVX2 the block
// is one head of 64 floats, and 8 broadcasts of the same weight were half the
// block's loads), else 1 (each vector finds its head).
template <int NV, int VPH>
void context_block(const HeadRows& r, int64_t d0) {
  static_assert(NV % VPH == 0);
  constexpr int kHeads = NV / VPH;
  const float* w[kHeads];  // the weights of each head of the block
  int64_t at[NV];          // the vector's first float within a position's values
  for (int v = 0; v < NV; ++v) {
    const int64_t d = d0 + v * kLanes, h = d / r.hd;
    if (v % VPH == 0) w[v / VPH] = r.p + h * r.ldp;
    at[v] = h * r.head_stride + d % r.hd;
  }
  vf acc[NV];
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) acc[v] = zero();
  if (d0 == 0)
    for (int64_t j = 0; j < kAhead && j < r.n; ++j) prefetch_position(r, r.values, j);
  for (int64_t j = 0; j < r.n; ++j) {
    if (d0 == 0 && j + kAhead < r.n) prefetch_position(r, r.values, j + kAhead);
    const float* x = r.values + pos(r, j);
    vf p[kHeads];
#pragma GCC unroll 16
    for (int g = 0; g < kHeads; ++g) p[g] = set1(w[g][j]);
#pragma GCC unroll 16
    for (int v = 0; v < NV; ++v) acc[v] = fmadd(p[v / VPH], load(x + at[v]), acc[v]);
  }
#pragma GCC unroll 16
  for (int v = 0; v < NV; ++v) store(r.ctx + d0 + v * kLanes, acc[v]);
}

// the blocks of kBlock vectors with VPH vectors per head
template <int VPH>
int64_t context_blocks(const HeadRows& r, int64_t vec) {
  int64_t d0 = 0;
  for (; d0 + kBlock * kLanes <= vec; d0 += kBlock * kLanes) context_block<kBlock, VPH>(r, d0);
  return d0;
}

void context(const HeadRows& r) {
  // vectors never straddle two heads: hd a multiple of kLanes (else the scalar tail below)
  const int64_t E = r.H * r.hd, vec = r.hd % kLanes == 0 ? E : 0, vph = r.hd / kLanes;
  // blocks start on a head when a head's vectors divide the block
  int64_t d0 = vph == 8 && kBlock % 8 == 0   ? context_blocks<8>(r, vec)
               : vph == 4 && kBlock % 4 == 0 ? context_blocks<4>(r, vec)
               : vph == 2 && kBlock % 2 == 0 ? context_blocks<2>(r, vec)
                                             : context_blocks<1>(r, vec);
  for (; d0 < vec; d0 += kLanes) context_block<1, 1>(r, d0);
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
