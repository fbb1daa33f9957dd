// Gate kernels of the fused recurrent ops (rnn_ops.cpp): one time step of a
// GRU or LSTM over the n active rows of a packed batch, forward and backward.
// No autograd, no allocation, no threading: the driver owns the buffers, the
// GEMMs and the threads. Compiled per instruction set and chosen at run time
// (kernels/dispatch.h): the inline functions below call the build for cpu::isa(). A call covers the hidden units [k_begin, k_end) of
// every row (the driver gives each thread its own slice of hidden units, for
// all gates of those units), so that a thread's gate pass reads only the GEMM
// columns that thread computed itself.
//
// Legend: n = rows active at this step (a prefix of the length-sorted batch),
// H = hidden size. Gate blocks are laid out as in PyTorch's weights:
// GRU [r | z | n] (3H), LSTM [i | f | g | o] (4H). Inputs `gx` and `gh` are the
// GEMM results x W_ih^T and h W_hh^T WITHOUT biases; the kernels add b_ih and
// b_hh (which the GRU needs apart: b_hn sits inside r * (.)).
//
// The forward kernels exist twice: with simd::FastMath (the vectorised Cephes
// activations of simd/math.h, the one the ops use) and with simd::ExactMath
// (std:: functions in double, the plain reference that tests/test_rnn_kernels.cpp
// holds the fast one to). The backward kernels read the saved activations and
// evaluate no transcendental function, so they have one version.
#pragma once
#include <cstdint>

#include "attn/kernels/dispatch.h"

namespace attn::rnn_kernels {

enum class Math { Fast, Exact };

// GRU step, PyTorch torch.nn.GRU equations (Cho et al. 2014, "Learning Phrase
// Representations using RNN Encoder-Decoder", with the reset gate applied
// after the hidden projection as in cuDNN / PyTorch):
//   r  = sigmoid(W_ir x + b_ir + W_hr h + b_hr)
//   z  = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
//   n  = tanh(W_in x + b_in + r * (W_hn h + b_hn))
//   h' = (1 - z) * n + z * h
struct GruForward {
  int64_t n = 0, hidden = 0;
  int64_t k_begin = 0, k_end = 0;  // hidden units covered, 0 <= k_begin <= k_end <= H
  float* gates = nullptr;              // [n, 3H] in: x W_ih^T; out: r, z, n (saved unless ghn is null)
  const float* gh = nullptr;           // [n, 3H] h W_hh^T
  const float* b_ih = nullptr;         // [3H]
  const float* b_hh = nullptr;         // [3H]
  const float* h_prev = nullptr;       // [n, H] (may be next_rows' rows: a search's state in place)
  float* ghn = nullptr;                // [n, H] out: W_hn h + b_hn (saved); null: inference, nothing saved
  float* const* y_rows = nullptr;      // [n] row j's h' goes to y_rows[j][0:H] ...
  float* const* next_rows = nullptr;   // [n] ... and to next_rows[j][0:H] (next h_prev, or h_n)
};
ATTN_ISA_DECLARE(void gru_forward(const GruForward& a, Math math);)
inline void gru_forward(const GruForward& a, Math math = Math::Fast) { ATTN_ISA_CALL(gru_forward, a, math); }

// Backward of one GRU step. dh_total = dh + dy (the output at this step and
// the carry from step t+1). With dn_pre, dr_pre, dz_pre the gradients of the
// pre-activations:
//   dn_pre = dh_total (1 - z) (1 - n^2)
//   dz_pre = dh_total (h - n) z (1 - z)
//   dr_pre = dn_pre (W_hn h + b_hn) r (1 - r)
//   d(x-side gates) dgx = [dr_pre, dz_pre, dn_pre]
//   d(h-side gates) dgh = [dr_pre, dz_pre, dn_pre * r]
//   dh_prev = dh_total z  (+ dgh W_hh, the caller's GEMM)
struct GruBackward {
  int64_t n = 0, hidden = 0;
  int64_t k_begin = 0, k_end = 0;  // hidden units covered, 0 <= k_begin <= k_end <= H
  const float* gates = nullptr;        // [n, 3H] r, z, n from forward
  const float* ghn = nullptr;          // [n, H] W_hn h + b_hn
  const float* h_prev = nullptr;       // [n, H]
  const float* const* dy_rows = nullptr;  // [n] d(loss)/d(y) at row j's time step, H floats each
  float* dh = nullptr;                 // [n, H] in: carry d(loss)/d(h'); out: dh_total * z
  float* dgx = nullptr;                // [n, 3H] out
  float* dgh = nullptr;                // [n, 3H] out
};
ATTN_ISA_DECLARE(void gru_backward(const GruBackward& a);)
inline void gru_backward(const GruBackward& a) { ATTN_ISA_CALL(gru_backward, a); }

// LSTM step, PyTorch torch.nn.LSTM equations (Hochreiter & Schmidhuber 1997;
// forget gate of Gers et al. 2000; no peepholes):
//   i = sigmoid(W_ii x + b_ii + W_hi h + b_hi)
//   f = sigmoid(W_if x + b_if + W_hf h + b_hf)
//   g = tanh(W_ig x + b_ig + W_hg h + b_hg)
//   o = sigmoid(W_io x + b_io + W_ho h + b_ho)
//   c' = f * c + i * g
//   h' = o * tanh(c')
struct LstmForward {
  int64_t n = 0, hidden = 0;
  int64_t k_begin = 0, k_end = 0;  // hidden units covered, 0 <= k_begin <= k_end <= H
  float* gates = nullptr;              // [n, 4H] in: x W_ih^T; out: i, f, g, o (saved)
  const float* gh = nullptr;           // [n, 4H] h W_hh^T
  const float* b_ih = nullptr;         // [4H]
  const float* b_hh = nullptr;         // [4H]
  const float* c_prev = nullptr;       // [n, H] (may be c_rows' rows: a search's state in place)
  float* tanh_c = nullptr;             // [n, H] out: tanh(c') (saved)
  float* const* y_rows = nullptr;      // [n] h' goes here ...
  float* const* next_rows = nullptr;   // [n] ... and here (next h_prev, or h_n)
  float* const* c_rows = nullptr;      // [n] c' goes here (next c_prev, or c_n)
};
ATTN_ISA_DECLARE(void lstm_forward(const LstmForward& a, Math math);)
inline void lstm_forward(const LstmForward& a, Math math = Math::Fast) { ATTN_ISA_CALL(lstm_forward, a, math); }

// Backward of one LSTM step. dh_total = dh + dy, tc = tanh(c'):
//   dc_total = dc + dh_total o (1 - tc^2)
//   di_pre = dc_total g i (1 - i)
//   df_pre = dc_total c f (1 - f)
//   dg_pre = dc_total i (1 - g^2)
//   do_pre = dh_total tc o (1 - o)
//   dc_prev = dc_total f;  dh_prev = dgates W_hh (the caller's GEMM)
struct LstmBackward {
  int64_t n = 0, hidden = 0;
  int64_t k_begin = 0, k_end = 0;  // hidden units covered, 0 <= k_begin <= k_end <= H
  const float* gates = nullptr;        // [n, 4H] i, f, g, o from forward
  const float* c_prev = nullptr;       // [n, H]
  const float* tanh_c = nullptr;       // [n, H]
  const float* const* dy_rows = nullptr;  // [n] d(loss)/d(y) at row j's time step
  const float* dh = nullptr;           // [n, H] carry d(loss)/d(h') (consumed)
  float* dc = nullptr;                 // [n, H] in: carry d(loss)/d(c'); out: dc_prev
  float* dgates = nullptr;             // [n, 4H] out: gradient of the pre-activations (x and h side alike)
};
ATTN_ISA_DECLARE(void lstm_backward(const LstmBackward& a);)
inline void lstm_backward(const LstmBackward& a) { ATTN_ISA_CALL(lstm_backward, a); }

}  // namespace attn::rnn_kernels
