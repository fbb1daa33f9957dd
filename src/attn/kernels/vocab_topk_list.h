// The rule of a TopKList (vocab_topk.h) as free functions of the instruction
// set being compiled (ISA-internal header, kernels/dispatch.h): included only by
// ISA sources (vocab_topk.cpp, kernels/rnnsearch_rows.cpp), so that these inline
// functions live in that instruction set's namespace.
#pragma once
#include <cstdint>

#include "attn/kernels/vocab_topk.h"
#include "attn/simd/vec.h"  // ATTN_SIMD_ISA

namespace attn::models::topk {
inline namespace ATTN_SIMD_ISA {

// Whether value y would enter the list now.
inline bool enters(const TopKList& list, float y) { return list.n < list.k || y > list.values[list.n - 1]; }

// Inserts (token, y) at its place (y must enter: see enters()), dropping the
// last entry of a full list.
inline void insert(TopKList& list, int token, float y) {
  int64_t pos = list.n < list.k ? list.n : list.k - 1;  // the slot that frees up: the end, or the dropped last
  while (pos > 0 && list.values[pos - 1] < y) {
    list.values[pos] = list.values[pos - 1];
    list.tokens[pos] = list.tokens[pos - 1];
    --pos;
  }
  list.values[pos] = y;
  list.tokens[pos] = token;
  if (list.n < list.k) ++list.n;
}

}  // namespace ATTN_SIMD_ISA
}  // namespace attn::models::topk
