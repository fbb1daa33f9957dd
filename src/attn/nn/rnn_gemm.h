// The recurrence's per-step GEMMs with the weight packed once per sequence.
//
// Every step of a GRU/LSTM multiplies a small activation block (the batch's
// rows) by the same recurrent weight: h W_hh^T forward, dgates W_hh backward.
// A BLAS call packs its operands on every call, and here the packed operand
// is the whole weight (3 MB at H = 512): on this machine that packing was ~25%
// of a step. So the weight is packed once into column panels and each step
// runs a register-blocked micro-kernel over them (the GotoBLAS/BLIS scheme
// with a persistent B panel, as oneDNN's and cuDNN's RNNs pre-pack weights).
//
// Layout: B [K, groups * width] (for the forward, groups = G gates of width H),
// split per group into panels of kPanel consecutive columns, zero-padded at a
// group's end, so that no panel straddles two gates and a thread that owns
// hidden units [k0, k1) owns whole panels of every gate.
#pragma once
#include <cstdint>

#include "attn/kernels/panel_gemm.h"  // kPanel; the kernels
#include "attn/tensor/tensor.h"

namespace attn::rnn_gemm {

struct PackedWeight {
  Tensor data;  // [groups, blocks, K, kPanel]
  int64_t K = 0, groups = 0, width = 0, blocks = 0;  // blocks = ceil(width / kPanel)
  const float* panel(int64_t group, int64_t block) const {
    return data.data() + (group * blocks + block) * K * kPanel;
  }
};

// B = W^T for W [groups * width, K] row-major (forward: W_hh [G*H, H], K = H).
PackedWeight pack_transposed(const float* w, int64_t K, int64_t groups, int64_t width);
// B = W for W [K, width] row-major with row stride ld (0: width), one group
// (backward: W_hh [G*H, H], K = G*H; or a block of columns of a wider weight).
PackedWeight pack(const float* w, int64_t K, int64_t width, int64_t ld = 0);

// C[i, g*width + k] = (C[i, g*width + k] if accumulate) + sum_j A[i, j] B[j, g*width + k]
// for rows i < m, every group g, and the columns k in [k0, k1) of each group.
// A [m, K] with row stride lda, C with row stride ldc. k0 must be a multiple of
// kPanel (a thread's slice), k1 <= width.
void gemm_packed(int64_t m, const float* a, int64_t lda, const PackedWeight& b, int64_t k0, int64_t k1, float* c,
                 int64_t ldc, bool accumulate);

// One panel: C[i, j] (+)= sum_k A[i, k] B[k, g*width + block*kPanel + j] for rows
// i < m and j < min(kPanel, width - block*kPanel), C relative to the panel (a
// caller's small tile, e.g. to post-process it while it is in L1).
void gemm_panel(int64_t m, const float* a, int64_t lda, const PackedWeight& b, int64_t group, int64_t block, float* c,
                int64_t ldc, bool accumulate);

}  // namespace attn::rnn_gemm
