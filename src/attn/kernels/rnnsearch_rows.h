// The hot per-row loops of RNNsearch's fused decoder loop (rnnsearch_decoder.cpp,
// training) and fused search step (rnnsearch_search.cpp), compiled per
// instruction set (kernels/rnnsearch_rows.cpp is an ISA source, kernels/dispatch.h): the
// inline functions below call the build for cpu::isa(). The glue (shape checks,
// buffers, the OpenMP phases, the products through nn::StepLinear) stays there.
//
// Legend: A attention size, Dv annotation size, S source length, L <= S the
// keys a row attends to, k tokens kept per row.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::models::rnnsearch_kernels {

// Backward of one row's additive attention (the decoder loop, a = softmax(e),
// e_j = v^T tanh(q + k_j), c = sum_j a_j h_j), given dc; a plain aggregate.
struct AttendBackward {
  int64_t A = 0, Dv = 0, L = 0;
  const float* q = nullptr;       // [A] the row's query projection
  const float* keys = nullptr;    // [L, A] the row's sentence's keys (row stride A)
  const float* v = nullptr;       // [A] the score vector
  const float* values = nullptr;  // [L, Dv] the sentence's values (row stride Dv)
  const float* w = nullptr;       // [L] the forward's attention weights
  const float* dc = nullptr;      // [Dv] d(loss)/d(c)
  float* dkeys = nullptr;         // [L, A] +=
  float* dvalues = nullptr;       // [L, Dv] +=
  float* dq = nullptr;            // [A] +=
  float* dv = nullptr;            // [A] +=
  float* da = nullptr;            // [L] scratch: d(loss)/d(a_j)
};

// One row of a logits tile of the search step: adds the bias, records the
// tile's max and sum exp(logit - max), and offers the logits to the row's
// running top k (when its max would enter). A plain aggregate.
struct LogitsTile {
  float* x = nullptr;             // [m, ld] the tile, logits of tokens first_token .. + cols
  int64_t ld = 0, m = 0, cols = 0;
  int first_token = 0;
  const float* bias = nullptr;    // [cols] b_y of these tokens, or null
  float* tile_max = nullptr;      // row r's max goes to tile_max[r * stats_ld]
  float* tile_sum = nullptr;      // and its sum exp(logit - max) to tile_sum[r * stats_ld]
  int64_t stats_ld = 0;
  int* tokens = nullptr;          // [m, k] row r's list: tokens + r k, values + r k, n[r] entries
  float* values = nullptr;
  int64_t* n = nullptr;           // [m]
  int64_t k = 0;
};

ATTN_ISA_DECLARE(void attend_row(const float* qp, const float* kp, const float* v, int64_t A, const float* h,
                                 int64_t Dv, int64_t L, int64_t S, float* w, float* c, const float* next_kp,
                                 int64_t next_kp_floats);
                 void attention_weights_row(const float* qp, const float* kp, const float* v, int64_t A, int64_t L,
                                            int64_t S, float* w, const float* pf, int64_t pf_floats);
                 void weighted_rows_add(const float* w, int64_t L, const float* rows, int64_t ld, int64_t cols,
                                        float* out, const float* next, int64_t next_floats);
                 void attend_row_backward(const AttendBackward& a);
                 void tanh_columns(float* t, int64_t ldt, int64_t n, int64_t c0, int64_t c1);
                 void logits_tile(const LogitsTile& t);
                 float lse_of_tiles(const float* tile_max, const float* tile_sum, int64_t n);)

// One query of an additive attention step over the first L of S keys:
// w [S] = softmax_j(v^T tanh(qp + kp_j)) (0 for j >= L), c [Dv] = sum_j w_j h_j;
// qp [A], kp [S, A], h [S, Dv]; next_kp [next_kp_floats] (or null) is fetched
// into L2 meanwhile (kernels/additive_math.h's attend_row).
inline void attend_row(const float* qp, const float* kp, const float* v, int64_t A, const float* h, int64_t Dv,
                       int64_t L, int64_t S, float* w, float* c, const float* next_kp = nullptr,
                       int64_t next_kp_floats = 0) {
  ATTN_ISA_CALL(attend_row, qp, kp, v, A, h, Dv, L, S, w, c, next_kp, next_kp_floats);
}

// The weights alone: w [S] = softmax_j(v^T tanh(qp + kp_j)) (0 for j >= L);
// row j of pf [L, pf_floats] (or null) is fetched into L2 meanwhile.
inline void attention_weights_row(const float* qp, const float* kp, const float* v, int64_t A, int64_t L, int64_t S,
                                  float* w, const float* pf = nullptr, int64_t pf_floats = 0) {
  ATTN_ISA_CALL(attention_weights_row, qp, kp, v, A, L, S, w, pf, pf_floats);
}

// out [cols] += sum_{j < L} w_j rows_j, rows [L, ld]; next [next_floats] (or
// null) is fetched into L2 meanwhile.
inline void weighted_rows_add(const float* w, int64_t L, const float* rows, int64_t ld, int64_t cols, float* out,
                              const float* next = nullptr, int64_t next_floats = 0) {
  ATTN_ISA_CALL(weighted_rows_add, w, L, rows, ld, cols, out, next, next_floats);
}

// da_j = dc . h_j, dh_j += a_j dc, then de_j = a_j (da_j - sum_k a_k da_k)
// through the score (kernels/additive_math.h's score_row_backward) into dkeys, dq, dv.
inline void attend_row_backward(const AttendBackward& a) { ATTN_ISA_CALL(attend_row_backward, a); }

// t[i, c] = tanh(t[i, c]) for rows i < n (row stride ldt), columns c in [c0, c1)
// (simd/math.h's tanh)
inline void tanh_columns(float* t, int64_t ldt, int64_t n, int64_t c0, int64_t c1) {
  ATTN_ISA_CALL(tanh_columns, t, ldt, n, c0, c1);
}

// every row of a logits tile (see LogitsTile)
inline void logits_tile(const LogitsTile& t) { ATTN_ISA_CALL(logits_tile, t); }

// log sum exp of a row from its n tiles' (max, sum exp(x - max)), combined in tile order
inline float lse_of_tiles(const float* tile_max, const float* tile_sum, int64_t n) {
  ATTN_ISA_CALL(lse_of_tiles, tile_max, tile_sum, n);
}

}  // namespace attn::models::rnnsearch_kernels
