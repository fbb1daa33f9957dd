// Fused scaled dot-product attention: the forward and backward kernels (flash.h
// describes the algorithm, kernels/flash.h the interface). An ISA source
// (kernels/dispatch.h): compiled once per instruction set, raw pointers only (no
// Tensor, no std:: templates; the helpers below stand in for std::min, std::fill).
#include "attn/kernels/flash.h"

#include <omp.h>

#include "attn/kernels/dropout_hash.h"
#include "attn/kernels/tile_gemm.h"
#include "attn/kernels/transpose.h"
#include "attn/simd/math.h"

namespace attn::attention::flash::kernels::ATTN_SIMD_ISA {
namespace {
using namespace simd;
using detail::tile_gemm;
using detail::transpose_scaled;

// Block sizes (measured: 64 x 64 is as fast as 64 x 128 or 128 x 64 for long
// sequences and skips more causal work for short ones). Queries per block are
// the lane axis of every tile: kBr, or kBrShort when all queries fit in it (at
// L <= 32 a 64-lane block would be half padding, doubling the arithmetic).
constexpr int64_t kBr = 64;
constexpr int64_t kBrShort = 32;
constexpr int64_t kBc = 64;    // keys per block
constexpr int64_t kGroup = 4;  // backward: key blocks per pass over the queries
constexpr float kInf = __builtin_inff();
constexpr int64_t kParallelWork = 1 << 18;  // multiply-adds below which one thread does it all

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }
int64_t min_i(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t max_i(int64_t a, int64_t b) { return a > b ? a : b; }
void fill(float* p, int64_t n, float x) {
  for (int64_t i = 0; i < n; ++i) p[i] = x;
}
void copy(const float* src, int64_t n, float* dst) { __builtin_memcpy(dst, src, size_t(n) * sizeof(float)); }

int64_t key_count(const Problem& p, int64_t b) { return p.key_lengths ? int64_t(p.key_lengths[b]) : p.Lk; }

// Attention dropout on P: keep with probability 1 - p, kept weights scaled by 1/(1-p)
struct Dropout {
  bool on = false;
  uint32_t threshold = 0;
  float keep_scale = 1.0f;
};
Dropout dropout_of(const Problem& p) {
  return {p.dropout > 0.0f, detail::dropout_threshold(p.dropout), 1.0f / (1.0f - p.dropout)};
}

// Dropout row keys of the BR lanes of the query block starting at i0.
template <int64_t BR>
void dropout_row_keys(const Problem& p, int64_t bh, int64_t i0, uint32_t* keys) {
  for (int64_t l = 0; l < BR; ++l) keys[l] = detail::dropout_row_key(p.seed, uint64_t(bh * p.Lq + i0 + l));
}

// st [nj, BR] (keys x query lanes): -inf where key j0+j is hidden from query
// i0+lane by the causal rule (j > i) or the general mask. Key lengths are
// handled by the callers' loop bounds.
template <int64_t BR>
void mask_scores(const Problem& p, int64_t b, int64_t h, int64_t i0, int64_t ni, int64_t j0, int64_t nj, float* st) {
  constexpr int kV = int(BR) / kLanes;
  if (p.causal && j0 + nj - 1 > i0) {
    const vf ninf = set1(-kInf);
    for (int64_t j = 0; j < nj; ++j) {
      float lim = float(j0 + j - i0);  // hidden lanes: lane < lim
      if (lim <= 0.0f) continue;
      vf vlim = set1(lim);
      float* s = st + j * BR;
      for (int v = 0; v < kV; ++v) {
        vf lane = add(iota(), set1(float(v * kLanes)));
        store(s + v * kLanes, select(lt(lane, vlim), ninf, load(s + v * kLanes)));
      }
    }
  }
  if (p.mask) {
    const float* mrow = p.mask + b * p.mask_sb + h * p.mask_sh + i0 * p.mask_si;
    for (int64_t j = 0; j < nj; ++j) {
      const float* m = mrow + (j0 + j) * p.mask_sj;
      float* s = st + j * BR;
      if (p.mask_si == 0) {
        if (m[0] == 0.0f)
          for (int64_t l = 0; l < BR; ++l) s[l] = -kInf;
      } else {
        for (int64_t l = 0; l < ni; ++l)
          if (m[l * p.mask_si] == 0.0f) s[l] = -kInf;
      }
    }
  }
}

// Asks for [p, p + floats) to be brought into L2 ahead of use: the next block of
// keys/values (or queries) streams from L3 while this one is computed. Long
// sequences (K, V of one head > L2) otherwise stall on every block.
inline void prefetch_l2(const float* p, int64_t floats) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t b = 0; b < floats * int64_t(sizeof(float)); b += 64) __builtin_prefetch(c + b, 0, 2);
}
// rows of `len` floats, `ld` apart
inline void prefetch_rows(const float* p, int64_t rows, int64_t len, int64_t ld) {
  if (ld == len) return prefetch_l2(p, rows * len);
  for (int64_t r = 0; r < rows; ++r) prefetch_l2(p + r * ld, len);
}

// ---- forward ----

// The online softmax over one key block, all BR query lanes at once: st [nj, BR]
// scores in, P = exp(s - m') out; m, l [BR] the running max and sum; O^T [Dv, BR]
// rescaled to the new max.
//   m' = max(m, max_j s_j), P_j = exp(s_j - m'), l' = l e^(m - m') + sum_j P_j
template <int64_t BR>
void online_softmax(float* st, int64_t nj, float* mrow, float* lrow, float* ot, int64_t Dv) {
  constexpr int kV = int(BR) / kLanes;
  vf mx[kV], msafe[kV], sum[kV], alpha[kV];
  for (int u = 0; u < kV; ++u) mx[u] = load(mrow + u * kLanes);
  for (int64_t j = 0; j < nj; ++j)
    for (int u = 0; u < kV; ++u) mx[u] = max(mx[u], load(st + j * BR + u * kLanes));
  for (int u = 0; u < kV; ++u) {
    // a lane that has seen no visible key yet keeps m = -inf; exp(s - 0) of -inf is 0
    msafe[u] = select(eq(mx[u], set1(-kInf)), zero(), mx[u]);
    alpha[u] = exp(sub(load(mrow + u * kLanes), msafe[u]));
    sum[u] = zero();
    store(mrow + u * kLanes, mx[u]);
  }
  for (int64_t j = 0; j < nj; ++j) {
    float* s = st + j * BR;
    for (int u = 0; u < kV; ++u) {
      vf e = exp(sub(load(s + u * kLanes), msafe[u]));
      store(s + u * kLanes, e);
      sum[u] = add(sum[u], e);
    }
  }
  for (int u = 0; u < kV; ++u) store(lrow + u * kLanes, fmadd(load(lrow + u * kLanes), alpha[u], sum[u]));
  // O^T *= alpha (the old partial output was weighted against the old max)
  for (int64_t dv = 0; dv < Dv; ++dv)
    for (int u = 0; u < kV; ++u) store(ot + dv * BR + u * kLanes, mul(load(ot + dv * BR + u * kLanes), alpha[u]));
}

// One block of BR queries (query block qb of head bh) against all its visible
// keys; buf: this thread's Qt [D, BR], Ot [Dv, BR], St [kBc, BR], m, l, dropout
// factors [BR].
template <int64_t BR>
void forward_query_block(const Problem& p, const Dropout& drop, int64_t bh, int64_t qb, float* out, float* lse,
                         float* buf) {
  constexpr int kV = int(BR) / kLanes;  // vectors across one block of queries
  const int64_t D = p.D, Dv = p.Dv, Lq = p.Lq;
  float* qt = buf;
  float* ot = qt + D * BR;
  float* st = ot + Dv * BR;
  float* mrow = st + kBc * BR;
  float* lrow = mrow + BR;
  float* fac = lrow + BR;
  uint32_t keys[BR];
  const int64_t b = bh / p.H, h = bh % p.H;
  const int64_t i0 = qb * BR, ni = min_i(BR, Lq - i0);
  const int64_t qs = p.lq.si, ks = p.lk.si, vs = p.lv.si;  // row strides
  const float* q = p.q + b * p.lq.sb + h * p.lq.sh + i0 * qs;
  const float* k = p.k + b * p.lk.sb + h * p.lk.sh;
  const float* v = p.v + b * p.lv.sb + h * p.lv.sh;
  int64_t kend = key_count(p, b);
  if (p.causal) kend = min_i(kend, i0 + ni);

  // Qt[d][lane] = scale * q[i0 + lane][d], zero past the last query
  transpose_scaled(q, qs, qt, BR, D, ni, p.scale);
  if (ni < BR)
    for (int64_t d = 0; d < D; ++d) fill(qt + d * BR + ni, BR - ni, 0.0f);
  fill(ot, Dv * BR, 0.0f);
  fill(mrow, BR, -kInf);
  fill(lrow, BR, 0.0f);
  if (drop.on) dropout_row_keys<BR>(p, bh, i0, keys);

  for (int64_t j0 = 0; j0 < kend; j0 += kBc) {
    const int64_t nj = min_i(kBc, kend - j0);
    if (j0 + kBc < kend) {
      const int64_t nn = min_i(kBc, kend - j0 - kBc);
      prefetch_rows(k + (j0 + kBc) * ks, nn, D, ks);
      prefetch_rows(v + (j0 + kBc) * vs, nn, Dv, vs);
    }
    // S^T [nj, BR] = K_j Qt  (scores, already scaled)
    tile_gemm(nj, BR, D, k + j0 * ks, ks, 1, qt, BR, st, BR, false);
    mask_scores<BR>(p, b, h, i0, ni, j0, nj, st);
    online_softmax<BR>(st, nj, mrow, lrow, ot, Dv);
    if (drop.on) {  // O uses the dropped P; l keeps the full sum
      for (int64_t j = 0; j < nj; ++j) {
        detail::dropout_factors(keys, uint64_t(j0 + j), drop.threshold, drop.keep_scale, fac, int(BR));
        float* s = st + j * BR;
        for (int u = 0; u < kV; ++u) store(s + u * kLanes, mul(load(s + u * kLanes), load(fac + u * kLanes)));
      }
    }
    // O^T [Dv, BR] += V_j^T P^T
    tile_gemm(Dv, BR, nj, v + j0 * vs, 1, vs, st, BR, ot, BR, true);
  }

  // O = O^T / l (rows that saw no key: 0), written back row-major
  float* ls = lse + bh * Lq + i0;
  for (int64_t l = 0; l < BR; ++l) {
    const float sum = lrow[l];
    if (l < ni) ls[l] = sum > 0.0f ? mrow[l] + __builtin_logf(sum) : kInf;
    lrow[l] = sum > 0.0f ? 1.0f / sum : 0.0f;
  }
  for (int64_t dv = 0; dv < Dv; ++dv)
    for (int u = 0; u < kV; ++u)
      store(ot + dv * BR + u * kLanes, mul(load(ot + dv * BR + u * kLanes), load(lrow + u * kLanes)));
  transpose_scaled(ot, BR, out + b * p.lo.sb + h * p.lo.sh + i0 * p.lo.si, p.lo.si, ni, Dv, 1.0f);
}

template <int64_t BR>
void forward_blocks(const Problem& p, float* out, float* lse, const KernelScratch& scratch) {
  const int64_t BH = p.B * p.H, nqb = ceil_div(p.Lq, BR), items = BH * nqb;
  if (items == 0) return;
  const Dropout drop = dropout_of(p);
  // per thread: Qt [D, BR], Ot [Dv, BR], St [kBc, BR], m, l, dropout factors [BR]
  const int64_t per_thread = p.D * BR + p.Dv * BR + kBc * BR + 3 * BR;
  float* buf = scratch.get(scratch.ctx, int64_t(omp_get_max_threads()) * per_thread);
  const bool parallel = items > 1 && BH * p.Lq * p.Lk * (p.D + p.Dv) > kParallelWork;

#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t it = 0; it < items; ++it)
    forward_query_block<BR>(p, drop, it / nqb, it % nqb, out, lse, buf + int64_t(omp_get_thread_num()) * per_thread);
}

// ---- backward ----

// Per-call constants of the backward.
struct Backward {
  Problem p;
  Layout gk, gv;  // dk, dv are written through these
  const float *out, *dout, *lse;
  float *dq, *dk, *dv;
  Dropout drop;
  int64_t nqb, Lqp, Dp, Dvp;  // query blocks, queries padded to blocks, D and Dv padded to whole vectors
  int64_t chunks;             // key ranges per (b, h)
  // Q and dO rows of a head are used in place as GEMM row operands when they are
  // contiguous whole vectors; otherwise (a head inside [B, L, 3, H, D], or D = 20)
  // copied into padded rows: strided rows alias in the cache (see flash.cpp's pack_rows)
  bool q_in_place, do_in_place;
  int64_t q_copy, do_copy;  // floats of those copies (0 in place)
  int64_t per_thread;       // scratch floats per thread
  float* partial;           // [BH x chunks, Lq x D] dQ partial sums when chunks > 1
};

// One thread's scratch: Qt, dOt, dQt blocks [nqb][D or Dv][BR]; Q rows [Lqp, Dp]
// and dO rows [Lqp, Dvp] when copied; lse, delta [Lqp]; St, P*Z, dP/dS, Z
// [kBc, BR]; dK, dV accumulators [kGroup * kBc, Dp / Dvp]
struct Buffers {
  float *qt_all, *dot_all, *dqt_all, *qs, *dor, *lse_p, *delta, *st, *pz, *ds, *z, *dkacc, *dvacc;
};

template <int64_t BR>
Buffers carve(const Backward& c, float* buf) {
  Buffers r;
  r.qt_all = buf;
  r.dot_all = r.qt_all + c.Lqp * c.p.D;
  r.dqt_all = r.dot_all + c.Lqp * c.p.Dv;
  r.qs = r.dqt_all + c.Lqp * c.p.D;
  r.dor = r.qs + c.q_copy;
  r.lse_p = r.dor + c.do_copy;
  r.delta = r.lse_p + c.Lqp;
  r.st = r.delta + c.Lqp;
  r.pz = r.st + kBc * BR;
  r.ds = r.pz + kBc * BR;
  r.z = r.ds + kBc * BR;
  r.dkacc = r.z + kBc * BR;
  r.dvacc = r.dkacc + kGroup * kBc * c.Dp;
  return r;
}

// One work item: head (b, h) and its key blocks [kb_begin, kb_end), with the
// row operands of dK += dS^T Q and dV += (P Z)^T dO: read in place when their
// rows are contiguous whole vectors (D = 64), else the padded copies.
struct Head {
  int64_t bh, b, h, klen, kb_begin, kb_end;
  const float *q, *k, *v, *o, *dO;
  const float *q_rows, *do_rows;
  int64_t q_rows_ld, do_rows_ld;
};

// Packs this (b, h)'s queries and output gradients, both transposed per block of
// BR queries (lanes = queries) and as rows padded to whole vectors; lse (+inf on
// padding lanes: P = 0 there) and delta_i = dO_i . O_i. Zeroes dQt.
template <int64_t BR>
void pack_head(const Backward& c, const Head& hd, const Buffers& s) {
  const Problem& p = c.p;
  const int64_t D = p.D, Dv = p.Dv, Lq = p.Lq, Dp = c.Dp, Dvp = c.Dvp;
  const int64_t q_ld = p.lq.si, o_ld = p.lo.si;
  for (int64_t blk = 0; blk < c.nqb; ++blk) {
    const int64_t i0 = blk * BR, ni = min_i(BR, Lq - i0);
    transpose_scaled(hd.q + i0 * q_ld, q_ld, s.qt_all + blk * D * BR, BR, D, ni, p.scale);
    transpose_scaled(hd.dO + i0 * o_ld, o_ld, s.dot_all + blk * Dv * BR, BR, Dv, ni, 1.0f);
    if (ni < BR) {
      for (int64_t d = 0; d < D; ++d) fill(s.qt_all + (blk * D + d) * BR + ni, BR - ni, 0.0f);
      for (int64_t d = 0; d < Dv; ++d) fill(s.dot_all + (blk * Dv + d) * BR + ni, BR - ni, 0.0f);
    }
  }
  fill(s.dqt_all, c.Lqp * D, 0.0f);
  for (int64_t i = 0; i < Lq; ++i) {
    const float* qi = hd.q + i * q_ld;
    const float* gi = hd.dO + i * o_ld;
    const float* oi = hd.o + i * o_ld;
    if (!c.q_in_place) {
      copy(qi, D, s.qs + i * Dp);
      fill(s.qs + i * Dp + D, Dp - D, 0.0f);
    }
    if (!c.do_in_place) {
      copy(gi, Dv, s.dor + i * Dvp);
      fill(s.dor + i * Dvp + Dv, Dvp - Dv, 0.0f);
    }
    float dlt = 0.0f;
#pragma omp simd reduction(+ : dlt)
    for (int64_t d = 0; d < Dv; ++d) dlt += gi[d] * oi[d];
    s.lse_p[i] = c.lse[hd.bh * Lq + i];
    s.delta[i] = dlt;
  }
  fill(s.lse_p + Lq, c.Lqp - Lq, kInf);
  fill(s.delta + Lq, c.Lqp - Lq, 0.0f);
}

// Key block j0 (nj keys, group slot g) against query block qb (i0, ni):
// S^T = K_j Qt (scaled), P^T = exp(S^T - lse) with hidden keys 0, then the
// gradients of the block into the group's dK, dV accumulators and into dQt.
template <int64_t BR>
void key_block(const Backward& c, const Head& hd, const Buffers& s, const uint32_t* keys, const vf* lsev, const vf* dlv,
               int64_t qb, int64_t i0, int64_t ni, int64_t g, int64_t j0, int64_t nj) {
  constexpr int kV = int(BR) / kLanes;
  const Problem& p = c.p;
  const int64_t D = p.D, Dv = p.Dv, Dp = c.Dp, Dvp = c.Dvp, k_ld = p.lk.si, v_ld = p.lv.si;
  const float* kj = hd.k + j0 * k_ld;
  const float* vj = hd.v + j0 * v_ld;
  float* dkj = s.dkacc + g * kBc * Dp;
  float* dvj = s.dvacc + g * kBc * Dvp;
  float *st = s.st, *pz = s.pz, *ds = s.ds, *z = s.z;
  // a local, as before the kernels moved here: with it the compiler takes the
  // branch below out of the loop and fuses dP Z - delta into one multiply-subtract;
  // read from c in the loop, it did neither and dq, dk changed in their last bits
  const bool dropout = c.drop.on;
  tile_gemm(nj, BR, D, kj, k_ld, 1, s.qt_all + qb * D * BR, BR, st, BR, false);
  mask_scores<BR>(p, hd.b, hd.h, i0, ni, j0, nj, st);
  for (int64_t j = 0; j < nj; ++j)
    for (int u = 0; u < kV; ++u) {
      float* sp = st + j * BR + u * kLanes;
      store(sp, exp(sub(load(sp), lsev[u])));
    }
  const float* pdrop = st;  // P Z: the weights the forward multiplied V by
  if (dropout) {
    for (int64_t j = 0; j < nj; ++j) {
      detail::dropout_factors(keys, uint64_t(j0 + j), c.drop.threshold, c.drop.keep_scale, z + j * BR, int(BR));
      for (int u = 0; u < kV; ++u)
        store(pz + j * BR + u * kLanes, mul(load(st + j * BR + u * kLanes), load(z + j * BR + u * kLanes)));
    }
    pdrop = pz;
  }
  // O = (P Z) V  =>  dV_j [nj, Dvp] += (P Z)^T dO_i
  tile_gemm(nj, Dvp, ni, pdrop, BR, 1, hd.do_rows + i0 * hd.do_rows_ld, hd.do_rows_ld, dvj, Dvp, true);
  // dP^T [nj, BR] = V_j dO_i^T
  tile_gemm(nj, BR, Dv, vj, v_ld, 1, s.dot_all + qb * Dv * BR, BR, ds, BR, false);
  // P = softmax(S)  =>  dS = P (dP Z - delta), delta_i = sum_j P_ij Z_ij dP_ij = dO_i . O_i
  for (int64_t j = 0; j < nj; ++j)
    for (int u = 0; u < kV; ++u) {
      float* gp = ds + j * BR + u * kLanes;
      vf dp = load(gp);
      if (dropout) dp = mul(dp, load(z + j * BR + u * kLanes));
      store(gp, mul(load(st + j * BR + u * kLanes), sub(dp, dlv[u])));
    }
  // S = scale Q K^T  =>  dK_j [nj, Dp] += dS^T Q_i  (times scale when written out)
  tile_gemm(nj, Dp, ni, ds, BR, 1, hd.q_rows + i0 * hd.q_rows_ld, hd.q_rows_ld, dkj, Dp, true);
  //                  and dQ_i^T [D, BR] += K_j^T dS^T  (times scale when written out)
  tile_gemm(D, BR, nj, kj, 1, k_ld, ds, BR, s.dqt_all + qb * D * BR, BR, true);
}

// Key blocks [kg, kg + ng) against every query block that sees them; their dK,
// dV written out (dK times scale) at the end. Key blocks go in groups of kGroup
// per pass over the query blocks, so the packed query data (80 KiB per block
// of 64 queries) is read from L3 once per kGroup key blocks; the group's dK, dV
// accumulators stay in L2.
template <int64_t BR>
void key_group(const Backward& c, const Head& hd, const Buffers& s, int64_t kg, int64_t ng) {
  constexpr int kV = int(BR) / kLanes;
  const Problem& p = c.p;
  const int64_t D = p.D, Dv = p.Dv, Lq = p.Lq, Dp = c.Dp, Dvp = c.Dvp;
  uint32_t keys[BR];
  fill(s.dkacc, ng * kBc * Dp, 0.0f);
  fill(s.dvacc, ng * kBc * Dvp, 0.0f);
  for (int64_t qb = p.causal ? kg * kBc / BR : 0; qb < c.nqb; ++qb) {
    const int64_t i0 = qb * BR, ni = min_i(BR, Lq - i0);
    if (qb + 1 < c.nqb) {  // the next query block's packed operands
      prefetch_l2(s.qt_all + (qb + 1) * D * BR, D * BR);
      prefetch_l2(s.dot_all + (qb + 1) * Dv * BR, Dv * BR);
      prefetch_l2(s.dqt_all + (qb + 1) * D * BR, D * BR);
      prefetch_l2(hd.q_rows + (i0 + BR) * hd.q_rows_ld, min_i(BR, Lq - i0 - BR) * hd.q_rows_ld);
      prefetch_l2(hd.do_rows + (i0 + BR) * hd.do_rows_ld, min_i(BR, Lq - i0 - BR) * hd.do_rows_ld);
    }
    vf lsev[kV], dlv[kV];
    for (int u = 0; u < kV; ++u) {
      lsev[u] = load(s.lse_p + i0 + u * kLanes);
      dlv[u] = load(s.delta + i0 + u * kLanes);
    }
    if (c.drop.on) dropout_row_keys<BR>(p, hd.bh, i0, keys);
    for (int64_t g = 0; g < ng; ++g) {
      const int64_t j0 = (kg + g) * kBc, nj = min_i(kBc, hd.klen - j0);
      if (p.causal && i0 + ni - 1 < j0) continue;  // every query of the block precedes every key
      key_block<BR>(c, hd, s, keys, lsev, dlv, qb, i0, ni, g, j0, nj);
    }
  }
  for (int64_t g = 0; g < ng; ++g) {
    const int64_t j0 = (kg + g) * kBc, nj = min_i(kBc, hd.klen - j0);
    float* dkj = c.dk + hd.b * c.gk.sb + hd.h * c.gk.sh + j0 * c.gk.si;
    float* dvj = c.dv + hd.b * c.gv.sb + hd.h * c.gv.sh + j0 * c.gv.si;
    const float* ka = s.dkacc + g * kBc * Dp;
    const float* va = s.dvacc + g * kBc * Dvp;
    for (int64_t j = 0; j < nj; ++j) {
      for (int64_t d = 0; d < D; ++d) dkj[j * c.gk.si + d] = p.scale * ka[j * Dp + d];
      copy(va + j * Dvp, Dv, dvj + j * c.gv.si);
    }
  }
}

// Work item `it`: head it / chunks, key range it % chunks of it.
template <int64_t BR>
void backward_item(const Backward& c, int64_t it, float* buf) {
  const Problem& p = c.p;
  const int64_t D = p.D, Dv = p.Dv, Lq = p.Lq, Lk = p.Lk;
  const Buffers s = carve<BR>(c, buf);
  Head hd;
  const int64_t ch = it % c.chunks;
  hd.bh = it / c.chunks, hd.b = hd.bh / p.H, hd.h = hd.bh % p.H;
  hd.q = p.q + hd.b * p.lq.sb + hd.h * p.lq.sh;
  hd.k = p.k + hd.b * p.lk.sb + hd.h * p.lk.sh;
  hd.v = p.v + hd.b * p.lv.sb + hd.h * p.lv.sh;
  hd.o = c.out + hd.b * p.lo.sb + hd.h * p.lo.sh;
  hd.dO = c.dout + hd.b * p.lo.sb + hd.h * p.lo.sh;
  hd.klen = key_count(p, hd.b);
  const int64_t nkb = ceil_div(hd.klen, kBc);
  hd.kb_begin = nkb * ch / c.chunks, hd.kb_end = nkb * (ch + 1) / c.chunks;
  hd.q_rows = c.q_in_place ? hd.q : s.qs;
  hd.do_rows = c.do_in_place ? hd.dO : s.dor;
  hd.q_rows_ld = c.q_in_place ? p.lq.si : c.Dp, hd.do_rows_ld = c.do_in_place ? p.lo.si : c.Dvp;

  pack_head<BR>(c, hd, s);
  for (int64_t kg = hd.kb_begin; kg < hd.kb_end; kg += kGroup)
    key_group<BR>(c, hd, s, kg, min_i(kGroup, hd.kb_end - kg));
  if (ch == c.chunks - 1 && hd.klen < Lk) {  // keys past the length: no gradient
    for (int64_t j = hd.klen; j < Lk; ++j) {
      fill(c.dk + hd.b * c.gk.sb + hd.h * c.gk.sh + j * c.gk.si, D, 0.0f);
      fill(c.dv + hd.b * c.gv.sb + hd.h * c.gv.sh + j * c.gv.si, Dv, 0.0f);
    }
  }
  float* dst = c.chunks > 1 ? c.partial + it * Lq * D : c.dq + hd.b * p.lq.sb + hd.h * p.lq.sh;
  const int64_t dld = c.chunks > 1 ? D : p.lq.si;
  for (int64_t blk = 0; blk < c.nqb; ++blk) {
    const int64_t i0 = blk * BR, ni = min_i(BR, Lq - i0);
    transpose_scaled(s.dqt_all + blk * D * BR, BR, dst + i0 * dld, dld, ni, D, p.scale);
  }
}

// dQ = the sum of the per-chunk partials (written through p.lq)
void sum_partials(const Backward& c) {
  const Problem& p = c.p;
  const int64_t BH = p.B * p.H, D = p.D, n = p.Lq * D, chunks = c.chunks;
  const float* pp = c.partial;
#pragma omp parallel for if (BH * n > (1 << 15))
  for (int64_t bh = 0; bh < BH; ++bh) {
    float* dqh = c.dq + (bh / p.H) * p.lq.sb + (bh % p.H) * p.lq.sh;
    for (int64_t e = 0; e < n; ++e) {
      float s = 0.0f;
      for (int64_t ch = 0; ch < chunks; ++ch) s += pp[(bh * chunks + ch) * n + e];
      dqh[(e / D) * p.lq.si + e % D] = s;
    }
  }
}

template <int64_t BR>
void backward_blocks(Backward& c, const KernelScratch& scratch) {
  const Problem& p = c.p;
  const int64_t BH = p.B * p.H, D = p.D, Dv = p.Dv, Lq = p.Lq, Lk = p.Lk;
  c.nqb = ceil_div(Lq, BR), c.Lqp = c.nqb * BR, c.Dp = round_up(D, kLanes), c.Dvp = round_up(Dv, kLanes);
  if (BH == 0) return;
  const int threads = omp_get_max_threads();
  // Split each (b, h) over key ranges only when there are fewer (b, h) than threads.
  c.chunks = BH >= threads ? 1 : min_i(ceil_div(threads, BH), max_i(1, ceil_div(Lk, kBc)));
  const bool parallel = BH * c.chunks > 1 && BH * Lq * Lk * (D + Dv) > kParallelWork;
  if (!parallel) c.chunks = 1;
  const int64_t n_items = BH * c.chunks;
  c.q_in_place = p.lq.si == D && D == c.Dp, c.do_in_place = p.lo.si == Dv && Dv == c.Dvp;
  c.q_copy = c.q_in_place ? 0 : c.Lqp * c.Dp, c.do_copy = c.do_in_place ? 0 : c.Lqp * c.Dvp;
  c.per_thread = c.Lqp * (2 * D + Dv + 2) + c.q_copy + c.do_copy + 4 * kBc * BR + kGroup * kBc * (c.Dp + c.Dvp) + BR;
  // the partial sums start on a 64-byte boundary of the pooled block
  const int64_t partial_at = round_up(threads * c.per_thread, 16);
  float* buf = scratch.get(scratch.ctx, partial_at + (c.chunks > 1 ? n_items * Lq * D : 0));
  c.partial = buf + partial_at;

#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t it = 0; it < n_items; ++it) backward_item<BR>(c, it, buf + int64_t(omp_get_thread_num()) * c.per_thread);
  if (c.chunks > 1) sum_partials(c);
}

}  // namespace

void forward(const Problem& p, float* out, float* lse, const KernelScratch& scratch) {
  if (p.Lq <= kBrShort)
    forward_blocks<kBrShort>(p, out, lse, scratch);
  else
    forward_blocks<kBr>(p, out, lse, scratch);
}

void backward(const Problem& p, const Layout& ldk, const Layout& ldv, const float* out, const float* dout,
              const float* lse, float* dq, float* dk, float* dv, const KernelScratch& scratch) {
  Backward c{};
  c.p = p, c.gk = ldk, c.gv = ldv, c.out = out, c.dout = dout, c.lse = lse, c.dq = dq, c.dk = dk, c.dv = dv;
  c.drop = dropout_of(p);
  if (p.Lq <= kBrShort)
    backward_blocks<kBrShort>(c, scratch);
  else
    backward_blocks<kBr>(c, scratch);
}

}  // namespace attn::attention::flash::kernels::ATTN_SIMD_ISA
