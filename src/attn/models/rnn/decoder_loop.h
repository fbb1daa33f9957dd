// The skeleton of every fused decoder loop (training path): rnnsearch's
// (rnnsearch_decoder.cpp) and luong's (luong_decoder.cpp) are this loop with
// their own attention plugged in, and a later model's is too.
//
//   forward, t = 0 .. T-1:   wiring.before_cells(t)     attention on the previous state (rnnsearch)
//                            cells.forward(t, wiring.extra(t))
//                            wiring.after_cells(t)      attention on the new state, output (luong)
//   backward, t = T-1 .. 0:  dtop = wiring.after_cells_backward(t)
//                            cells.backward(t, dtop, wiring.dextra(t))
//                            wiring.before_cells_backward(t)   adds d h_{t-1} into cells.dh_carry()
//   then cells.weight_grads(...) and the wiring's own weight gradients.
//
// CellStack is the part every model shares: L stacked GRU or LSTM layers
// (decoder_cell.h) over T steps of B rows. Layer 0's input is [emb_t; extra_t]:
// emb_t the target embedding, whose product with W_ih is one GEMM for all steps,
// and extra_t [B, X] what the model feeds back each step (rnnsearch: the context
// c_t; luong: h̃_{t-1}); layer l > 0's input is h^{l-1}_t * m^l_t (dropout masks
// between layers). The wiring is the model's: its score, its attention rows, the
// order of cell and attention, its output.
//
// Legend: T steps, B rows, E embedding, X layer 0's extra input, Hd hidden,
// L layers, G = 3 Hd (GRU) or 4 Hd (LSTM).
#pragma once
#include <cstdint>
#include <vector>

#include "attn/models/rnn/rnn_config.h"
#include "attn/nn/rnn.h"
#include "attn/nn/step_linear.h"

namespace attn::models::detail {

class CellStack {
 public:
  // layers: L x {w_ih [G, E + X] for layer 0, [G, Hd] above; w_hh [G, Hd]; biases [G] or undefined},
  // detached (the op records its own node); layer_masks [T, L - 1, B, Hd] or undefined.
  CellStack(CellType cell, std::vector<RnnWeights> layers, int64_t T, int64_t B, int64_t E, int64_t X,
            Tensor layer_masks);

  // Before step 0: h0 / c0 L x [B, Hd] (c0: LSTM only), and emb [T, B, E]'s product
  // with layer 0's embedding columns for all steps.
  void begin(const Tensor& emb, const std::vector<Tensor>& h0, const std::vector<Tensor>& c0);
  // Step t of every layer; extra [B, X] (row stride X) is layer 0's extra input, or null (zeros).
  void forward(int64_t t, const float* extra);
  // After step T - 1: drops the forward's packed weights.
  void end_forward();

  // h^l_t [B, Hd] (t = -1: h0[l]); top(t) is h^{L-1}_t. Rows of consecutive
  // steps are consecutive: h(l, -1) .. h(l, T - 1) is [(T + 1) B, Hd].
  const float* h(int64_t l, int64_t t) const { return H_[size_t(l)].data() + (t + 1) * B_ * Hd_; }
  const float* top(int64_t t) const { return h(L_ - 1, t); }

  // Backward of step t (call for t = T-1 .. 0 after begin_backward): dtop [B, Hd]
  // the gradient of top(t) from the step's consumers (null: zeros); writes
  // dextra [B, X] (d extra_t) unless null. On return dh_carry() holds the top
  // layer's d h_{t-1} so far: a wiring that read h_{t-1} adds its gradient there.
  void begin_backward();
  void backward(int64_t t, const float* dtop, float* dextra);
  float* dh_carry() { return dh_[size_t(L_ - 1)].data(); }

  // After the backward of step 0: per layer dW_ih, dW_hh, db_ih, db_hh (undefined
  // for an absent bias), and demb [T, B, E]. extra_rows holds extra_t for
  // t = first .. T-1 ([(T - first) B, X]; first = 1 when extra_0 was null).
  std::vector<Tensor> weight_grads(const Tensor& emb, const float* extra_rows, int64_t first, Tensor& demb) const;
  // d h0 and (LSTM) d c0, L x [B, Hd] each, after the backward of step 0.
  const std::vector<Tensor>& dh0() const { return dh_; }
  const std::vector<Tensor>& dc0() const { return dc_; }
  // After the gradients are taken: drops the backward's buffers (the saved
  // forward stays, so a second backward starts again at begin_backward).
  void end_backward();

 private:
  void layer_backward(int64_t t, int64_t l, const float* dabove, float* dextra);

  CellType cell_;
  std::vector<RnnWeights> w_;
  int64_t T_, B_, E_, X_, Hd_, G_, L_;
  Tensor masks_;
  std::vector<Tensor> H_, C_;   // L x [(T + 1) B, Hd]: block 0 h0 / c0, block t + 1 step t's (C_: LSTM only)
  std::vector<Tensor> gates_;   // L x [T B, G] activated gates (layer 0 starts as emb W_ie^T)
  std::vector<Tensor> aux_;     // L x [T B, Hd] GRU: W_hn h + b_hn; LSTM: tanh(c')
  std::vector<Tensor> Xin_;     // L x [T B, Hd] layer l > 0's masked input (Xin_[0] undefined)
  // the forward's products with weights packed once (nn::StepLinear), and its buffers
  std::vector<nn::StepLinear> ih_, hh_;  // ih_[0]: the extra columns of layer 0's W_ih
  std::vector<Tensor> b_ih_, b_hh_, w_extra_;
  Tensor gh_;
  // the backward's: transposed products, gate gradients, carries
  std::vector<nn::StepLinear> ih_t_, hh_t_;
  std::vector<Tensor> dgx_, dgh_, dh_, dc_;  // dgx / dgh L x [T B, G] (LSTM: dgh_ undefined); dh / dc L x [B, Hd]
  Tensor dx_, zero_row_;
};

// dW = dG^T Y over rows [0, n) into the columns [c0, c0 + cols) of dW [M, ld]
// (zeros when n <= 0): dG [n, M], Y [n, cols]. A weight's gradient over all T B rows.
void weight_grad(Tensor& dW, int64_t c0, const float* dG, int64_t M, const float* Y, int64_t cols, int64_t n);

// The loop itself: see the top of this file for what a Wiring provides.
template <class Wiring>
void run_decoder_forward(CellStack& cells, Wiring& wiring, int64_t T) {
  for (int64_t t = 0; t < T; ++t) {
    wiring.before_cells(t);
    cells.forward(t, wiring.extra(t));
    wiring.after_cells(t);
  }
  cells.end_forward();
}

template <class Wiring>
void run_decoder_backward(CellStack& cells, Wiring& wiring, int64_t T) {
  cells.begin_backward();
  for (int64_t t = T - 1; t >= 0; --t) {
    const float* dtop = wiring.after_cells_backward(t);
    cells.backward(t, dtop, wiring.dextra(t));
    wiring.before_cells_backward(t);
  }
}

}  // namespace attn::models::detail
