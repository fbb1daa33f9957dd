// The recurrence machinery shared by the fused "gru" and "lstm" ops
// (rnn_ops.cpp): the packed-sequence schedule, the split of a step's work
// across threads, and the per-step product with the recurrent weight.
// Internal to attn/nn; no autograd.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/nn/rnn_gemm.h"

namespace attn::rnn {

// How a padded batch is walked (PyTorch's PackedSequence layout): the batch is
// sorted by length, descending (stable); at step s the active sequences are the
// first batch_sizes[s] of that order, and their rows are stored contiguously
// from packed row offsets[s]. A sequence's rows of consecutive steps are at the
// same position j, so the state rows of step s are a prefix of step s-1's.
struct Schedule {
  int64_t batch = 0, seq_len = 0, steps = 0, total = 0;
  std::vector<int64_t> lengths;      // [batch] valid steps of each sequence
  std::vector<int64_t> order;        // [batch] sorted position j -> batch index (length descending, stable)
  std::vector<int64_t> batch_sizes;  // [steps + 1] rows active at step s; batch_sizes[steps] = 0
  std::vector<int64_t> offsets;      // [steps + 1] first packed row of step s; offsets[steps] = total
  std::vector<int64_t> row_bt;       // [total] packed row -> b * seq_len + t, its place in [batch, seq_len, .]
};

// Step s of sorted row j is time t = s (forward) or lengths[b] - 1 - s (reverse).
// lengths in [0, seq_len] (validated by the caller).
Schedule make_schedule(const std::vector<int64_t>& lengths, int64_t seq_len, bool reverse);

// One team lives through the whole sequence. Each thread owns a slice of the
// hidden units [k0, k1) and, for every gate g, the columns g*H + [k0, k1) of
// the step GEMM: so it computes exactly the gate pre-activations its own gate
// pass needs, and a step costs one barrier (h' must be complete before the
// next GEMM reads it). BLAS inside the team runs single-threaded.
struct HiddenSlice {
  int64_t k0, k1;
};

// Slices are whole panels of the packed weight (rnn_gemm.h), 32 units.
HiddenSlice hidden_slice(int tid, int threads, int64_t H);

// A team pays off when a step's GEMM is worth splitting: from ~0.5 MFLOP on
// (batch 1 at H = 512 qualifies). Below, one thread runs the loop and BLAS
// threads each GEMM as it sees fit.
int recurrence_threads(int64_t rows, int64_t H, int64_t GH);

// The recurrent weight as the step GEMMs use it. Over two or more steps it is
// packed once into panels (rnn_gemm.h: a BLAS call would re-pack the whole
// weight every step); a single step (a decoder's cell) goes to BLAS directly.
struct StepWeight {
  const float* w;                // W_hh [G*H, H]
  int64_t G, H;
  bool transposed;               // forward: h W^T; backward: dgates W
  rnn_gemm::PackedWeight packed; // empty when BLAS is used

  StepWeight(const float* w_hh, int64_t G, int64_t H, bool transposed, int64_t steps);

  // Forward: out[n, G*H], columns g*H + [k0, k1) of every gate, = a[n, H] W^T.
  // Backward: out[n, H], columns [k0, k1), (+)= a[n, G*H] W.
  void multiply(int64_t n, const float* a, const HiddenSlice& sl, float* out, bool accumulate) const;
};

}  // namespace attn::rnn
