// The pieces every fused decoder loop shares (rnnsearch_decoder.cpp,
// luong_decoder.cpp): one step of a GRU or LSTM layer over the B rows of a
// batch, forward and backward, with its rows split across threads, and the
// per-step products through weights packed once (nn::StepLinear). The fused
// training loops stack them in decoder_loop.h's CellStack; the fused search
// steps (rnnsearch_search.cpp, luong_search.cpp) call them in their own
// parallel region.
//
// Legend: B rows (sentences), Hd hidden size, G = 3 Hd (GRU: r, z, n) or
// 4 Hd (LSTM: i, f, g, o), as PyTorch lays out the gate blocks (kernels/rnn_gates.h).
#pragma once
#include <cstdint>

#include "attn/models/rnn/rnn_config.h"
#include "attn/nn/step_linear.h"

namespace attn::models::detail {

inline int64_t gate_count(CellType cell) { return cell == CellType::Lstm ? 4 : 3; }

using nn::apply_all;  // (nn/step_linear.h) every fused loop's products through packed weights

// One forward step of a layer: PyTorch's GRU / LSTM equations (kernels/rnn_gates.h).
struct CellForward {
  CellType cell = CellType::Gru;
  int64_t B = 0, Hd = 0;
  float* gates = nullptr;         // [B, G] in: x W_ih^T (no bias); out: the activated gates (saved)
  const float* gh = nullptr;      // [B, G] h_prev W_hh^T (no bias)
  const float* b_ih = nullptr;    // [G]
  const float* b_hh = nullptr;    // [G]
  const float* h_prev = nullptr;  // [B, Hd]
  const float* c_prev = nullptr;  // [B, Hd] LSTM: the previous cell
  float* ghn = nullptr;           // [B, Hd] GRU out: W_hn h + b_hn (saved)
  float* tanh_c = nullptr;        // [B, Hd] LSTM out: tanh(c') (saved)
  float* h = nullptr;             // [B, Hd] out: h'
  float* h_copy = nullptr;        // [B, Hd] out: h' again (e.g. the next step's h_prev), or null
  float* c = nullptr;             // [B, Hd] LSTM out: c'
};
void cell_forward(const CellForward& f);

// The backward of one forward step: from the gradient dy of its output h'
// and the carries, the gate gradients. The caller then adds the h-side
// product (GRU: dh += dgh W_hh; LSTM: dh = dgx W_hh) and the x side (dgx W_ih).
struct CellBackward {
  CellType cell = CellType::Gru;
  int64_t B = 0, Hd = 0;
  const float* gates = nullptr;   // [B, G] the forward's activated gates
  const float* ghn = nullptr;     // [B, Hd] GRU
  const float* h_prev = nullptr;  // [B, Hd] GRU
  const float* c_prev = nullptr;  // [B, Hd] LSTM
  const float* tanh_c = nullptr;  // [B, Hd] LSTM
  const float* dy = nullptr;      // [B, Hd] d(loss)/d(h') from this step's consumers, or null (zeros)
  float* dh = nullptr;            // [B, Hd] in: the carry d(loss)/d(h') from the next step;
                                  // out: GRU dh_total z (the caller adds dgh W_hh); LSTM consumed
  float* dc = nullptr;            // [B, Hd] LSTM in: carry d(loss)/d(c'); out: d(loss)/d(c_prev)
  float* dgx = nullptr;           // [B, G] out: x-side gate gradients (LSTM: the pre-activations')
  float* dgh = nullptr;           // [B, G] GRU out: h-side gate gradients (LSTM: not written)
  const float* zero_row = nullptr;  // [Hd] zeros (read for rows when dy is null)
};
void cell_backward(const CellBackward& b);

}  // namespace attn::models::detail
