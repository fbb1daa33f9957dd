// Fused scaled dot-product attention: forward and backward kernels (see flash.h).
#include "attn/attention/flash.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "attn/attention/dropout_hash.h"
#include "attn/attention/tile_gemm.h"
#include "attn/attention/transpose.h"
#include "attn/simd/math.h"
#include "attn/tensor/tensor.h"

namespace attn::attention::flash {
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
constexpr int64_t kBc = 64;  // keys per block
constexpr int64_t kGroup = 4;  // backward: key blocks per pass over the queries
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr int64_t kParallelWork = 1 << 18;  // multiply-adds below which one thread does it all

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }
int64_t ceil_div(int64_t x, int64_t m) { return (x + m - 1) / m; }

int64_t key_count(const Problem& p, int64_t b) { return p.key_lengths ? int64_t(p.key_lengths[b]) : p.Lk; }

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

// Scratch floats per thread, carved out of one pooled tensor before the parallel region.
struct Scratch {
  Tensor buf;
  int64_t per_thread;
  Scratch(int64_t floats) : buf(Tensor::empty({int64_t(omp_get_max_threads()), floats})), per_thread(floats) {}
  float* mine() { return buf.data() + int64_t(omp_get_thread_num()) * per_thread; }
};

// Keys or values stored with a row stride other than their width (a head inside
// [B, L, 3, H, D]) are copied to a contiguous [B, H, L, W] first: every query block
// streams the whole head's keys and values, and rows 3E floats apart alias to a
// fraction of the cache sets (measured: the strided forward at L = 2048 was ~1.5x
// slower than this copy plus the contiguous kernel). Returns an undefined tensor
// (and leaves p alone) when the operand is contiguous already.
Tensor pack_rows(const float*& ptr, Layout& l, int64_t B, int64_t H, int64_t L, int64_t W) {
  if (l.si == W && l.sh == L * W && l.sb == H * L * W) return Tensor();
  Tensor t = Tensor::empty({B, H, L, W});
  const float* src = ptr;
  const Layout sl = l;
  float* dst = t.data();
#pragma omp parallel for if (B * H * L * W > (1 << 16))
  for (int64_t bh = 0; bh < B * H; ++bh) {
    const float* s = src + (bh / H) * sl.sb + (bh % H) * sl.sh;
    float* d = dst + bh * L * W;
    for (int64_t j = 0; j < L; ++j) std::copy(s + j * sl.si, s + j * sl.si + W, d + j * W);
  }
  ptr = t.data();
  l = contiguous(H, L, W);
  return t;
}

template <int64_t BR>
void forward_blocks(const Problem& p_in, float* out, float* lse) {
  constexpr int kV = int(BR) / kLanes;  // vectors across one block of queries
  Problem p = p_in;
  Tensor k_packed = pack_rows(p.k, p.lk, p.B, p.H, p.Lk, p.D), v_packed = pack_rows(p.v, p.lv, p.B, p.H, p.Lk, p.Dv);
  const int64_t BH = p.B * p.H, nqb = ceil_div(p.Lq, BR), items = BH * nqb;
  const int64_t D = p.D, Dv = p.Dv, Lq = p.Lq, Lk = p.Lk;
  if (items == 0) return;
  const uint32_t threshold = detail::dropout_threshold(p.dropout);
  const float keep_scale = 1.0f / (1.0f - p.dropout);
  const bool dropout = p.dropout > 0.0f;
  // per thread: Qt [D, BR], Ot [Dv, BR], St [kBc, BR], m, l, dropout factors [BR]
  Scratch scratch(D * BR + Dv * BR + kBc * BR + 3 * BR);
  const bool parallel = items > 1 && BH * Lq * Lk * (D + Dv) > kParallelWork;

#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t it = 0; it < items; ++it) {
    float* qt = scratch.mine();
    float* ot = qt + D * BR;
    float* st = ot + Dv * BR;
    float* mrow = st + kBc * BR;
    float* lrow = mrow + BR;
    float* fac = lrow + BR;
    uint32_t keys[BR];
    const int64_t bh = it / nqb, qb = it % nqb, b = bh / p.H, h = bh % p.H;
    const int64_t i0 = qb * BR, ni = std::min(BR, Lq - i0);
    const int64_t qs = p.lq.si, ks = p.lk.si, vs = p.lv.si;  // row strides
    const float* q = p.q + b * p.lq.sb + h * p.lq.sh + i0 * qs;
    const float* k = p.k + b * p.lk.sb + h * p.lk.sh;
    const float* v = p.v + b * p.lv.sb + h * p.lv.sh;
    int64_t kend = key_count(p, b);
    if (p.causal) kend = std::min(kend, i0 + ni);

    // Qt[d][lane] = scale * q[i0 + lane][d], zero past the last query
    transpose_scaled(q, qs, qt, BR, D, ni, p.scale);
    if (ni < BR)
      for (int64_t d = 0; d < D; ++d) std::fill(qt + d * BR + ni, qt + (d + 1) * BR, 0.0f);
    std::fill(ot, ot + Dv * BR, 0.0f);
    std::fill(mrow, mrow + BR, -kInf);
    std::fill(lrow, lrow + BR, 0.0f);
    if (dropout) dropout_row_keys<BR>(p, bh, i0, keys);

    for (int64_t j0 = 0; j0 < kend; j0 += kBc) {
      const int64_t nj = std::min(kBc, kend - j0);
      if (j0 + kBc < kend) {
        const int64_t nn = std::min(kBc, kend - j0 - kBc);
        prefetch_rows(k + (j0 + kBc) * ks, nn, D, ks);
        prefetch_rows(v + (j0 + kBc) * vs, nn, Dv, vs);
      }
      // S^T [nj, BR] = K_j Qt  (scores, already scaled)
      tile_gemm(nj, BR, D, k + j0 * ks, ks, 1, qt, BR, st, BR, false);
      mask_scores<BR>(p, b, h, i0, ni, j0, nj, st);
      // online softmax over the keys of this block, all lanes at once:
      //   m' = max(m, max_j s_j), P_j = exp(s_j - m'), l' = l e^(m - m') + sum_j P_j
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
      if (dropout) {  // O uses the dropped P; l keeps the full sum
        for (int64_t j = 0; j < nj; ++j) {
          detail::dropout_factors(keys, uint64_t(j0 + j), threshold, keep_scale, fac, int(BR));
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
      if (l < ni) ls[l] = sum > 0.0f ? mrow[l] + std::log(sum) : kInf;
      lrow[l] = sum > 0.0f ? 1.0f / sum : 0.0f;
    }
    for (int64_t dv = 0; dv < Dv; ++dv)
      for (int u = 0; u < kV; ++u)
        store(ot + dv * BR + u * kLanes, mul(load(ot + dv * BR + u * kLanes), load(lrow + u * kLanes)));
    transpose_scaled(ot, BR, out + b * p.lo.sb + h * p.lo.sh + i0 * p.lo.si, p.lo.si, ni, Dv, 1.0f);
  }
}

template <int64_t BR>
void backward_blocks(const Problem& p_in, const float* out, const float* dout, const float* lse, float* dq, float* dk,
              float* dv) {
  constexpr int kV = int(BR) / kLanes;
  Problem p = p_in;
  const Layout gk = p.lk, gv = p.lv;  // dk, dv are written as k, v are stored
  Tensor k_packed = pack_rows(p.k, p.lk, p.B, p.H, p.Lk, p.D), v_packed = pack_rows(p.v, p.lv, p.B, p.H, p.Lk, p.Dv);
  const int64_t BH = p.B * p.H, D = p.D, Dv = p.Dv, Lq = p.Lq, Lk = p.Lk;
  const int64_t nqb = ceil_div(Lq, BR), Lqp = nqb * BR, Dp = round_up(D, kLanes), Dvp = round_up(Dv, kLanes);
  if (BH == 0) return;
  const int threads = omp_get_max_threads();
  // Split each (b, h) over key ranges only when there are fewer (b, h) than threads.
  int64_t chunks = BH >= threads ? 1 : std::min(ceil_div(threads, BH), std::max<int64_t>(1, ceil_div(Lk, kBc)));
  const int64_t items = BH * chunks;
  const uint32_t threshold = detail::dropout_threshold(p.dropout);
  const float keep_scale = 1.0f / (1.0f - p.dropout);
  const bool dropout = p.dropout > 0.0f;
  const bool parallel = items > 1 && BH * Lq * Lk * (D + Dv) > kParallelWork;
  if (!parallel) chunks = 1;
  const int64_t n_items = BH * chunks;

  // Q and dO rows of a head are used in place as GEMM row operands when they are
  // contiguous whole vectors; otherwise (a head inside [B, L, 3, H, D], or D = 20)
  // copied into padded rows: strided rows alias in the cache (see pack_rows)
  const bool q_in_place = p.lq.si == D && D == Dp, do_in_place = p.lo.si == Dv && Dv == Dvp;
  const int64_t q_copy = q_in_place ? 0 : Lqp * Dp, do_copy = do_in_place ? 0 : Lqp * Dvp;
  // per thread: Qt, dOt, dQt blocks [nqb][D or Dv][BR]; Q rows [Lqp, Dp] and dO
  // rows [Lqp, Dvp] when copied; lse, delta [Lqp]; St, P*Z, dP/dS, Z [kBc, BR];
  // dK, dV accumulators [kGroup * kBc, Dp / Dvp]; dropout factors [BR]
  Scratch scratch(Lqp * (2 * D + Dv + 2) + q_copy + do_copy + 4 * kBc * BR + kGroup * kBc * (Dp + Dvp) + BR);
  Tensor partial = chunks > 1 ? Tensor::empty({n_items, Lq * D}) : Tensor();

#pragma omp parallel for schedule(dynamic) if (parallel)
  for (int64_t it = 0; it < n_items; ++it) {
    float* qt_all = scratch.mine();
    float* dot_all = qt_all + Lqp * D;
    float* dqt_all = dot_all + Lqp * Dv;
    float* qs = dqt_all + Lqp * D;
    float* dor = qs + q_copy;
    float* lse_p = dor + do_copy;
    float* delta = lse_p + Lqp;
    float* st = delta + Lqp;
    float* pz = st + kBc * BR;
    float* ds = pz + kBc * BR;
    float* z = ds + kBc * BR;
    float* dkacc = z + kBc * BR;
    float* dvacc = dkacc + kGroup * kBc * Dp;
    uint32_t keys[BR];

    const int64_t bh = it / chunks, c = it % chunks, b = bh / p.H, h = bh % p.H;
    const int64_t q_ld = p.lq.si, k_ld = p.lk.si, v_ld = p.lv.si, o_ld = p.lo.si;  // row strides
    const float* q = p.q + b * p.lq.sb + h * p.lq.sh;
    const float* k = p.k + b * p.lk.sb + h * p.lk.sh;
    const float* v = p.v + b * p.lv.sb + h * p.lv.sh;
    const float* o = out + b * p.lo.sb + h * p.lo.sh;
    const float* dO = dout + b * p.lo.sb + h * p.lo.sh;
    const int64_t klen = key_count(p, b);
    const int64_t nkb = ceil_div(klen, kBc), kb_begin = nkb * c / chunks, kb_end = nkb * (c + 1) / chunks;

    // pack this (b, h)'s queries and output gradients, both transposed per block
    // of 64 queries (lanes = queries) and as rows padded to whole vectors; lse
    // (+inf on padding lanes: P = 0 there) and delta_i = dO_i . O_i
    for (int64_t blk = 0; blk < nqb; ++blk) {
      const int64_t i0 = blk * BR, ni = std::min(BR, Lq - i0);
      transpose_scaled(q + i0 * q_ld, q_ld, qt_all + blk * D * BR, BR, D, ni, p.scale);
      transpose_scaled(dO + i0 * o_ld, o_ld, dot_all + blk * Dv * BR, BR, Dv, ni, 1.0f);
      if (ni < BR) {
        for (int64_t d = 0; d < D; ++d) std::fill(qt_all + (blk * D + d) * BR + ni, qt_all + (blk * D + d + 1) * BR, 0.0f);
        for (int64_t d = 0; d < Dv; ++d)
          std::fill(dot_all + (blk * Dv + d) * BR + ni, dot_all + (blk * Dv + d + 1) * BR, 0.0f);
      }
    }
    std::fill(dqt_all, dqt_all + Lqp * D, 0.0f);
    // The row operands of dK += dS^T Q and dV += (P Z)^T dO: read in place when
    // their rows are contiguous whole vectors (D = 64), else copied padded
    const float* q_rows = q_in_place ? q : qs;
    const float* do_rows = do_in_place ? dO : dor;
    const int64_t q_rows_ld = q_in_place ? q_ld : Dp, do_rows_ld = do_in_place ? o_ld : Dvp;
    for (int64_t i = 0; i < Lq; ++i) {
      const float* qi = q + i * q_ld;
      const float* gi = dO + i * o_ld;
      const float* oi = o + i * o_ld;
      if (!q_in_place) {
        std::copy(qi, qi + D, qs + i * Dp);
        std::fill(qs + i * Dp + D, qs + (i + 1) * Dp, 0.0f);
      }
      if (!do_in_place) {
        std::copy(gi, gi + Dv, dor + i * Dvp);
        std::fill(dor + i * Dvp + Dv, dor + (i + 1) * Dvp, 0.0f);
      }
      float dlt = 0.0f;
#pragma omp simd reduction(+ : dlt)
      for (int64_t d = 0; d < Dv; ++d) dlt += gi[d] * oi[d];
      lse_p[i] = lse[bh * Lq + i];
      delta[i] = dlt;
    }
    std::fill(lse_p + Lq, lse_p + Lqp, kInf);
    std::fill(delta + Lq, delta + Lqp, 0.0f);

    // Key blocks go in groups of kGroup per pass over the query blocks, so the
    // packed query data (80 KiB per block of 64 queries) is read from L3 once
    // per kGroup key blocks; the group's dK, dV accumulators stay in L2.
    for (int64_t kg = kb_begin; kg < kb_end; kg += kGroup) {
      const int64_t ng = std::min(kGroup, kb_end - kg);
      std::fill(dkacc, dkacc + ng * kBc * Dp, 0.0f);
      std::fill(dvacc, dvacc + ng * kBc * Dvp, 0.0f);
      for (int64_t qb = p.causal ? kg * kBc / BR : 0; qb < nqb; ++qb) {
        const int64_t i0 = qb * BR, ni = std::min(BR, Lq - i0);
        if (qb + 1 < nqb) {  // the next query block's packed operands
          prefetch_l2(qt_all + (qb + 1) * D * BR, D * BR);
          prefetch_l2(dot_all + (qb + 1) * Dv * BR, Dv * BR);
          prefetch_l2(dqt_all + (qb + 1) * D * BR, D * BR);
          prefetch_l2(q_rows + (i0 + BR) * q_rows_ld, std::min(BR, Lq - i0 - BR) * q_rows_ld);
          prefetch_l2(do_rows + (i0 + BR) * do_rows_ld, std::min(BR, Lq - i0 - BR) * do_rows_ld);
        }
        vf lsev[kV], dlv[kV];
        for (int u = 0; u < kV; ++u) {
          lsev[u] = load(lse_p + i0 + u * kLanes);
          dlv[u] = load(delta + i0 + u * kLanes);
        }
        if (dropout) dropout_row_keys<BR>(p, bh, i0, keys);
        for (int64_t g = 0; g < ng; ++g) {
          const int64_t j0 = (kg + g) * kBc, nj = std::min(kBc, klen - j0);
          if (p.causal && i0 + ni - 1 < j0) continue;  // every query of the block precedes every key
          const float* kj = k + j0 * k_ld;
          const float* vj = v + j0 * v_ld;
          float* dkj = dkacc + g * kBc * Dp;
          float* dvj = dvacc + g * kBc * Dvp;
          // S^T = K_j Qt (scaled), P^T = exp(S^T - lse), hidden keys 0
          tile_gemm(nj, BR, D, kj, k_ld, 1, qt_all + qb * D * BR, BR, st, BR, false);
          mask_scores<BR>(p, b, h, i0, ni, j0, nj, st);
          for (int64_t j = 0; j < nj; ++j)
            for (int u = 0; u < kV; ++u) {
              float* s = st + j * BR + u * kLanes;
              store(s, exp(sub(load(s), lsev[u])));
            }
          const float* pdrop = st;  // P Z: the weights the forward multiplied V by
          if (dropout) {
            for (int64_t j = 0; j < nj; ++j) {
              detail::dropout_factors(keys, uint64_t(j0 + j), threshold, keep_scale, z + j * BR, int(BR));
              for (int u = 0; u < kV; ++u)
                store(pz + j * BR + u * kLanes, mul(load(st + j * BR + u * kLanes), load(z + j * BR + u * kLanes)));
            }
            pdrop = pz;
          }
          // O = (P Z) V  =>  dV_j [nj, Dvp] += (P Z)^T dO_i
          tile_gemm(nj, Dvp, ni, pdrop, BR, 1, do_rows + i0 * do_rows_ld, do_rows_ld, dvj, Dvp, true);
          // dP^T [nj, BR] = V_j dO_i^T
          tile_gemm(nj, BR, Dv, vj, v_ld, 1, dot_all + qb * Dv * BR, BR, ds, BR, false);
          // P = softmax(S)  =>  dS = P (dP Z - delta), delta_i = sum_j P_ij Z_ij dP_ij = dO_i . O_i
          for (int64_t j = 0; j < nj; ++j)
            for (int u = 0; u < kV; ++u) {
              float* gp = ds + j * BR + u * kLanes;
              vf dp = load(gp);
              if (dropout) dp = mul(dp, load(z + j * BR + u * kLanes));
              store(gp, mul(load(st + j * BR + u * kLanes), sub(dp, dlv[u])));
            }
          // S = scale Q K^T  =>  dK_j [nj, Dp] += dS^T Q_i  (times scale when written out)
          tile_gemm(nj, Dp, ni, ds, BR, 1, q_rows + i0 * q_rows_ld, q_rows_ld, dkj, Dp, true);
          //                  and dQ_i^T [D, BR] += K_j^T dS^T  (times scale when written out)
          tile_gemm(D, BR, nj, kj, 1, k_ld, ds, BR, dqt_all + qb * D * BR, BR, true);
        }
      }
      for (int64_t g = 0; g < ng; ++g) {
        const int64_t j0 = (kg + g) * kBc, nj = std::min(kBc, klen - j0);
        float* dkj = dk + b * gk.sb + h * gk.sh + j0 * gk.si;
        float* dvj = dv + b * gv.sb + h * gv.sh + j0 * gv.si;
        const float* ka = dkacc + g * kBc * Dp;
        const float* va = dvacc + g * kBc * Dvp;
        for (int64_t j = 0; j < nj; ++j) {
          for (int64_t d = 0; d < D; ++d) dkj[j * gk.si + d] = p.scale * ka[j * Dp + d];
          std::copy(va + j * Dvp, va + j * Dvp + Dv, dvj + j * gv.si);
        }
      }
    }
    if (c == chunks - 1 && klen < Lk) {  // keys past the length: no gradient
      for (int64_t j = klen; j < Lk; ++j) {
        float* dkr = dk + b * gk.sb + h * gk.sh + j * gk.si;
        float* dvr = dv + b * gv.sb + h * gv.sh + j * gv.si;
        std::fill(dkr, dkr + D, 0.0f);
        std::fill(dvr, dvr + Dv, 0.0f);
      }
    }
    float* dst = chunks > 1 ? partial.data() + it * Lq * D : dq + b * p.lq.sb + h * p.lq.sh;
    const int64_t dld = chunks > 1 ? D : q_ld;
    for (int64_t blk = 0; blk < nqb; ++blk) {
      const int64_t i0 = blk * BR, ni = std::min(BR, Lq - i0);
      transpose_scaled(dqt_all + blk * D * BR, BR, dst + i0 * dld, dld, ni, D, p.scale);
    }
  }

  if (chunks > 1) {  // sum the per-chunk dQ partials
    const int64_t n = Lq * D;
    const float* pp = partial.data();
#pragma omp parallel for if (BH * n > (1 << 15))
    for (int64_t bh = 0; bh < BH; ++bh) {
      float* dqh = dq + (bh / p.H) * p.lq.sb + (bh % p.H) * p.lq.sh;
      for (int64_t e = 0; e < n; ++e) {
        float s = 0.0f;
        for (int64_t c = 0; c < chunks; ++c) s += pp[(bh * chunks + c) * n + e];
        dqh[(e / D) * p.lq.si + e % D] = s;
      }
    }
  }
}

}  // namespace

void forward(const Problem& p, float* out, float* lse) {
  if (p.Lq <= kBrShort)
    forward_blocks<kBrShort>(p, out, lse);
  else
    forward_blocks<kBr>(p, out, lse);
}

void backward(const Problem& p, const float* out, const float* dout, const float* lse, float* dq, float* dk,
              float* dv) {
  if (p.Lq <= kBrShort)
    backward_blocks<kBrShort>(p, out, dout, lse, dq, dk, dv);
  else
    backward_blocks<kBr>(p, out, dout, lse, dq, dk, dv);
}

}  // namespace attn::attention::flash
