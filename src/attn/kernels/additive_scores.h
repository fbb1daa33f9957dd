// Kernels of the fused additive score op ("additive_scores", attention.h's
// fused_additive_scores): e_ij = v^T tanh(qa_i + ka_j) for all query/key pairs
// of every (b, h), and its backward, recomputing the tanh. Compiled per
// instruction set and chosen at run time (kernels/dispatch.h): the inline functions
// below call the build for cpu::isa(). Raw pointers only; additive_scores.cpp
// is the glue.
//
// Legend: BH batch x heads, Lq queries, Lk keys, A attention size.
// qa [BH, Lq, A], ka [BH, Lk, A], v [A], e and de [BH, Lq, Lk], all row-major.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::attention::additive_scores_kernels {

struct Scores {
  int64_t BH = 0, Lq = 0, Lk = 0, A = 0;
  const float* qa = nullptr;  // [BH, Lq, A]  W1 q + b
  const float* ka = nullptr;  // [BH, Lk, A]  W2 k
  const float* v = nullptr;   // [A]
};

// e [BH, Lq, Lk] = v^T tanh(qa_i + ka_j)
ATTN_ISA_DECLARE(void forward(const Scores& s, float* e);)
inline void forward(const Scores& s, float* e) { ATTN_ISA_CALL(forward, s, e); }

// de [BH, Lq, Lk] -> dqa [BH, Lq, A], dka [BH, Lk, A], dv_rows [BH, A] (per (b, h);
// the caller sums them), all three accumulated into (the caller zeroes them).
// Pairs with de = 0 (hidden keys) are skipped.
ATTN_ISA_DECLARE(void backward(const Scores& s, const float* de, float* dqa, float* dka, float* dv_rows);)
inline void backward(const Scores& s, const float* de, float* dqa, float* dka, float* dv_rows) {
  ATTN_ISA_CALL(backward, s, de, dqa, dka, dv_rows);
}

}  // namespace attn::attention::additive_scores_kernels
