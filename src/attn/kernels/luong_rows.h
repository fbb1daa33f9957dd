// The per-row attention of Luong's dot-product scores (dot, general: the keys
// are W_a h̄ then) in the fused decoder loop (luong_decoder.cpp, training) and
// search step (luong_search.cpp), global or over a local window, with
// local-p's Gaussian; compiled per instruction set (kernels/luong_rows.cpp is an
// ISA source, kernels/dispatch.h): the inline functions call the build for cpu::isa().
//
// Legend: K key size, Dv value size, S source length (padded); the row
// attends to the keys [lo, hi) (a local window clipped to the sentence's
// length, or [0, length) for global attention; none when lo >= hi).
//   s_j = q . k_j              a = softmax(s) over [lo, hi)
//   w_j = a_j g_j              g_j = exp(-(j - p)^2 / (2 sigma^2)) (local-p), else 1
//   c   = sum_j w_j v_j
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::models::luong_kernels {

// One row's forward (a plain aggregate).
struct DotAttend {
  int64_t K = 0, Dv = 0, S = 0, lo = 0, hi = 0;
  const float* q = nullptr;       // [K]
  const float* keys = nullptr;    // [S, K] the row's sentence's keys
  const float* values = nullptr;  // [S, Dv]
  bool gauss = false;             // local-p: multiply by g around p
  float p = 0.0f;                 // local-p's predicted position
  float inv_two_sigma2 = 0.0f;    // 1 / (2 sigma^2)
  float* a = nullptr;             // [S] out: the softmax (0 outside [lo, hi)); may equal w without gauss
  float* w = nullptr;             // [S] out: the weights a g (0 outside [lo, hi))
  float* c = nullptr;             // [Dv] out: the context
};

// One row's backward, given dc; accumulates into dq, dkeys, dvalues.
struct DotAttendBackward {
  int64_t K = 0, Dv = 0, lo = 0, hi = 0;
  const float* q = nullptr;       // [K]
  const float* keys = nullptr;    // [S, K]
  const float* values = nullptr;  // [S, Dv]
  const float* a = nullptr;       // [S] the forward's softmax
  bool gauss = false;
  float p = 0.0f, inv_two_sigma2 = 0.0f;
  const float* dc = nullptr;      // [Dv] d(loss)/d(c)
  float* dq = nullptr;            // [K] +=
  float* dkeys = nullptr;         // [S, K] +=
  float* dvalues = nullptr;       // [S, Dv] +=
  float* da = nullptr;            // [S] scratch
  float dp = 0.0f;                // out (local-p): d(loss)/d(p)
};

ATTN_ISA_DECLARE(void dot_attend(const DotAttend& a); void dot_attend_backward(DotAttendBackward& a);)

inline void dot_attend(const DotAttend& a) { ATTN_ISA_CALL(dot_attend, a); }
inline void dot_attend_backward(DotAttendBackward& a) { ATTN_ISA_CALL(dot_attend_backward, a); }

}  // namespace attn::models::luong_kernels
