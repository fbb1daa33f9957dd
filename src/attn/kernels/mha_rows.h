// Multi-head attention of one query row over n key / value rows, all heads in
// one pass: the cached step of the Transformer's search
// (models/transformer/transformer_search.cpp), compiled per instruction set
// (an ISA source, kernels/dispatch.h).
//
// Legend: H heads of hd floats (E = H hd), n keys. Key j of head h is at
// keys + h * head_stride + pos(j), its value at values + h * head_stride + pos(j),
// pos(j) = offsets[j] when offsets is given (a cache whose positions lie in
// other rows' slots), else j * pos_stride.
//
// Why all heads at once: the search's cache keeps a position's E floats
// together, so a pass over positions reads each position's keys (and values)
// as one contiguous row; a pass per head read 256 bytes of every position,
// a 64 KB stride apart, four times over (12% of a batch-64 greedy search as
// dot_attend per head, perf 2026-11-28).
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::kernels::mha {

struct HeadRows {
  int64_t H = 0, hd = 0, n = 0;
  int64_t head_stride = 0, pos_stride = 0;
  const int64_t* offsets = nullptr;  // [n] or null
  const float* q = nullptr;          // [H, hd], already scaled by 1 / sqrt(hd)
  const float* keys = nullptr;
  const float* values = nullptr;
  float* p = nullptr;                // [H, ldp] out: the softmax weights of positions 0..n-1 (n >= 1)
  int64_t ldp = 0;
  float* ctx = nullptr;              // [H, hd] out: sum_j p[h, j] value_j of head h
};

ATTN_ISA_DECLARE(void attend(const HeadRows& r);)

// The weights (max-subtracted softmax of q_h . key_{h,j}) and contexts of every
// head. No threading: callers split rows.
inline void attend(const HeadRows& r) { ATTN_ISA_CALL(attend, r); }

}  // namespace attn::kernels::mha
