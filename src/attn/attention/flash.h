// Fused scaled dot-product attention kernels, FlashAttention style (raw: no
// autograd; the differentiable op "sdpa_fused" in sdpa.cpp calls them).
//
// Legend: B batch, H heads, Lq query length, Lk key length, D query/key dim,
// Dv value dim. Each row (D or Dv floats) is contiguous; rows, heads and batches
// are addressed through element strides (Layout), so q, k, v, the output and the
// gradients can live inside a head-interleaved tensor such as MultiHeadAttention's
// packed projection [B, L, 3, H, D] without a permute. Default: contiguous [B, H, L, D].
//
// Forward (Dao et al. 2022, FlashAttention-2 loop order): for a block of 64
// queries, loop over blocks of keys; per block S = scale Q K^T, an online
// softmax keeps the running row max m and sum l and rescales the partial output,
// O += P V. The [Lq, Lk] score matrix is never stored; the forward keeps only the
// per-row log-sum-exp lse = m + log l for the backward. Key blocks past a row's
// key length, and (causal) blocks entirely above the diagonal, are skipped.
//
// Backward: per key block, loop over query blocks, recompute S and
// P = exp(S - lse), then
//   dV += P^T dO           dP = dO V^T
//   dS = P (dP - rowsum(dO * O))
//   dK += scale dS^T Q     dQ += scale dS K
// A query row with no visible key has O = 0, lse = +inf and zero gradients.
//
// Layout inside the kernels: queries run along the vector lanes (S is held
// transposed, [keys, 64 queries], or 32 when L <= 32) so the softmax's row max and sum are plain
// vertical vector ops; the GEMMs are the register-blocked tile in tile_gemm.h.
// Threads (OpenMP): forward over B x H x query blocks, backward over B x H (and
// over key ranges when B x H < threads, with private dQ partial sums).
//
// forward and backward (flash.cpp) are the glue: they copy strided keys and
// values to contiguous rows and provide the scratch memory, then call the
// kernels of kernels/flash.h, compiled per instruction set and chosen at run
// time (kernels/dispatch.h).
#pragma once
#include <cstdint>

namespace attn::attention::flash {

// Element (b, h, i, d) of an operand sits at b * sb + h * sh + i * si + d.
struct Layout {
  int64_t sb = 0, sh = 0, si = 0;
};
inline Layout contiguous(int64_t H, int64_t L, int64_t D) { return {H * L * D, L * D, D}; }

struct Problem {
  int64_t B = 0, H = 0, Lq = 0, Lk = 0, D = 0, Dv = 0;
  float scale = 1.0f;       // multiplies q.k
  const float* q = nullptr;  // [B, H, Lq, D] read through lq (dq is written the same way)
  const float* k = nullptr;  // [B, H, Lk, D]  through lk (and dk)
  const float* v = nullptr;  // [B, H, Lk, Dv] through lv (and dv)
  Layout lq, lk, lv, lo;     // lo: the output and its gradient; see set_contiguous
  // Visible keys: j < key_lengths[b] (null: all), j <= i when causal, and
  // mask[b*mask_sb + h*mask_sh + i*mask_si + j*mask_sj] != 0 (null: no mask;
  // a stride of 0 broadcasts that axis).
  const float* key_lengths = nullptr;  // [B], float-encoded counts in [0, Lk]
  bool causal = false;
  const float* mask = nullptr;
  int64_t mask_sb = 0, mask_sh = 0, mask_si = 0, mask_sj = 0;
  // Attention dropout on P (after the softmax): keep with probability 1 - p,
  // scaled by 1/(1-p); the pattern is a hash of (seed, row, key), see dropout_hash.h.
  float dropout = 0.0f;
  uint64_t seed = 0;
};

// p.lq, p.lk, p.lv, p.lo = contiguous [B, H, L, D] (call after setting the sizes).
// A free function: Problem is a plain aggregate, passed as it is to the kernels
// compiled per instruction set (kernels/flash.h).
void set_contiguous(Problem& p);

// out [B, H, Lq, Dv] (layout lo), lse [B, H, Lq] contiguous (+inf for rows that see no key).
void forward(const Problem& p, float* out, float* lse);

// dout [B, H, Lq, Dv] (layout lo) -> dq [B, H, Lq, D] (lq), dk [B, H, Lk, D] (lk),
// dv [B, H, Lk, Dv] (lv), every element of those views overwritten (dq, dk, dv may
// be disjoint views of one tensor). out and lse are the forward's.
void backward(const Problem& p, const float* out, const float* dout, const float* lse, float* dq, float* dk, float* dv);

}  // namespace attn::attention::flash
