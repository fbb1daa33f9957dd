// Kernels of the fused additive-attention decoder step (additive_step.h has
// the equations and the legend: B batch, Lk source length, Qd decoder state
// size, A attention size, Dv value size), compiled per instruction set and
// chosen at run time (kernels/dispatch.h): the inline functions below call the
// build for cpu::isa(). Raw pointers only; additive_step.cpp is the glue
// (checks, tensors, autograd, the BLAS products).
#pragma once
#include <cstdint>

#include "attn/attention/kernel_scratch.h"
#include "attn/kernels/dispatch.h"

namespace attn::attention::additive_step_kernels {

// qp [B, A] = query [B, Qd] W1^T, W1 [A, Qd], all row-major, on the fused
// kernels' register tile when the batch suits it (kLanes <= B <= 128, see the
// source); asks `scratch` once for (Qd + A) x B floats, B rounded up to whole
// vectors. Returns false, having done nothing, for any other B: the caller
// multiplies with BLAS.
ATTN_ISA_DECLARE(bool project_query(int64_t B, int64_t Qd, int64_t A, const float* query, const float* W1, float* qp,
                                    const KernelScratch& scratch);)
inline bool project_query(int64_t B, int64_t Qd, int64_t A, const float* query, const float* W1, float* qp,
                          const KernelScratch& scratch) {
  ATTN_ISA_CALL(project_query, B, Qd, A, query, W1, qp, scratch);
}

// Per row b: e_j = v^T tanh(qp_b + kp_bj), w = softmax over j < length_b (0
// beyond, all 0 for length 0), c = sum_j w_j h_bj; scores (when asked for) e_j,
// -inf beyond the length.
struct Forward {
  int64_t B = 0, Lk = 0, A = 0, Dv = 0;
  const float* qp = nullptr;       // [B, A]  W1 s
  const float* kp = nullptr;       // [B, Lk, A]  U h + b (project_keys)
  const float* values = nullptr;   // [B, Lk, Dv]
  const float* v = nullptr;        // [A]
  const float* lengths = nullptr;  // [B] float-encoded in [0, Lk]; null: all Lk
  float* weights = nullptr;        // [B, Lk] out
  float* context = nullptr;        // [B, Dv] out
  float* scores = nullptr;         // [B, Lk] out, or null: not wanted (inspection only, attn explain)
};
ATTN_ISA_DECLARE(void forward(const Forward& a);)
inline void forward(const Forward& a) { ATTN_ISA_CALL(forward, a); }

// The backward of forward's rows, but for qp = W1 s (the caller's GEMMs):
//   da_j = dc . h_j + dw_j,  dh_j = w_j dc,  de_j = w_j (da_j - sum_k w_k da_k),
//   then through e_j = v^T tanh(qp + kp_j): dkp_j, dqp, dv (kernels/additive_math.h).
struct Backward {
  int64_t B = 0, Lk = 0, A = 0, Dv = 0;
  const float* qp = nullptr;        // [B, A]
  const float* kp = nullptr;        // [B, Lk, A]
  const float* values = nullptr;    // [B, Lk, Dv]
  const float* v = nullptr;         // [A]
  const float* lengths = nullptr;   // [B] or null, as in Forward
  const float* weights = nullptr;   // [B, Lk] forward's
  const float* dcontext = nullptr;  // [B, Dv] or null (no gradient arrived)
  const float* dweights = nullptr;  // [B, Lk] or null
  float* dkp = nullptr;             // [B, Lk, A] out, every element
  float* dvalues = nullptr;         // [B, Lk, Dv] out, every element
  float* dqp = nullptr;             // [B, A] accumulated into (the caller zeroes it)
  float* dv_rows = nullptr;         // [B, A] per-row dv, accumulated into (zeroed by the caller)
  float* da = nullptr;              // [B, Lk] scratch
};
ATTN_ISA_DECLARE(void backward(const Backward& a);)
inline void backward(const Backward& a) { ATTN_ISA_CALL(backward, a); }

}  // namespace attn::attention::additive_step_kernels
