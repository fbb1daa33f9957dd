// The stacked cells of a fused decoder loop (see the header): forward, backward
// and the weight gradients as one GEMM each over all T B rows.
#include "attn/models/rnn/decoder_loop.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "attn/models/rnn/decoder_cell.h"
#include "attn/models/model_parts.h"
#include "attn/tensor/kernels.h"

namespace attn::models::detail {
void weight_grad(Tensor& dW, int64_t c0, const float* dG, int64_t M, const float* Y, int64_t cols, int64_t n) {
  const int64_t ld = dW.size(1);
  if (n <= 0) {
    for (int64_t i = 0; i < M; ++i) std::memset(dW.data() + i * ld + c0, 0, size_t(cols) * sizeof(float));
    return;
  }
  kernels::gemm(true, false, M, cols, n, 1.0f, dG, M, Y, cols, 0.0f, dW.data() + c0, ld);
}

CellStack::CellStack(CellType cell, std::vector<RnnWeights> layers, int64_t T, int64_t B, int64_t E, int64_t X,
                     Tensor layer_masks)
    : cell_(cell), w_(std::move(layers)), T_(T), B_(B), E_(E), X_(X), masks_(std::move(layer_masks)) {
  Hd_ = w_[0].weight_hh.size(1), G_ = gate_count(cell) * Hd_, L_ = int64_t(w_.size());
  for (int64_t l = 0; l < L_; ++l) {
    const RnnWeights& r = w_[size_t(l)];
    H_.push_back(Tensor::empty({(T + 1) * B, Hd_}));
    if (cell == CellType::Lstm) C_.push_back(Tensor::empty({(T + 1) * B, Hd_}));
    gates_.push_back(Tensor::empty({T * B, G_}));
    aux_.push_back(Tensor::empty({T * B, Hd_}));
    Xin_.push_back(l == 0 ? Tensor() : Tensor::empty({T * B, Hd_}));
    if (l == 0) w_extra_.push_back(columns(r.weight_ih, E, X));  // kept alive: StepLinear reads it
    ih_.emplace_back(l == 0 ? w_extra_[0] : r.weight_ih, true);
    hh_.emplace_back(r.weight_hh, true);
    b_ih_.push_back(or_zeros(r.bias_ih, {G_}));
    b_hh_.push_back(or_zeros(r.bias_hh, {G_}));
  }
  gh_ = Tensor::empty({B, G_});
}

void CellStack::begin(const Tensor& emb, const std::vector<Tensor>& h0, const std::vector<Tensor>& c0) {
  for (int64_t l = 0; l < L_; ++l) {
    std::memcpy(H_[size_t(l)].data(), h0[size_t(l)].data(), size_t(B_ * Hd_) * sizeof(float));
    if (cell_ == CellType::Lstm)
      std::memcpy(C_[size_t(l)].data(), c0[size_t(l)].data(), size_t(B_ * Hd_) * sizeof(float));
  }
  // the embedding half of layer 0's input projection for all steps: [T B, E] x [E, G]
  if (T_ > 0)
    kernels::gemm(false, true, T_ * B_, G_, E_, 1.0f, emb.data(), E_, w_[0].weight_ih.data(), E_ + X_, 0.0f,
                  gates_[0].data(), G_);
}

void CellStack::forward(int64_t t, const float* extra) {
  const int64_t B = B_, Hd = Hd_, G = G_;
  for (int64_t l = 0; l < L_; ++l) {
    float* g = gates_[size_t(l)].data() + t * B * G;
    if (l == 0) {  // g holds emb_t W_ie^T already
      if (extra) apply_all(ih_[0], B, extra, X_, g, G, true);
    } else {  // x = h^{l-1}_t * m^l_t
      float* x = Xin_[size_t(l)].data() + t * B * Hd;
      const float* below = h(l - 1, t);
      const float* m = masks_.defined() ? masks_.data() + (t * (L_ - 1) + l - 1) * B * Hd : nullptr;
      for (int64_t i = 0; i < B * Hd; ++i) x[i] = m ? below[i] * m[i] : below[i];
      apply_all(ih_[size_t(l)], B, x, Hd, g, G, false);
    }
    float* H = H_[size_t(l)].data();
    apply_all(hh_[size_t(l)], B, H + t * B * Hd, Hd, gh_.data(), G, false);
    CellForward f;
    f.cell = cell_, f.B = B, f.Hd = Hd;
    f.gates = g, f.gh = gh_.data(), f.b_ih = b_ih_[size_t(l)].data(), f.b_hh = b_hh_[size_t(l)].data();
    f.h_prev = H + t * B * Hd, f.h = H + (t + 1) * B * Hd;
    if (cell_ == CellType::Lstm) {
      f.c_prev = C_[size_t(l)].data() + t * B * Hd, f.c = C_[size_t(l)].data() + (t + 1) * B * Hd;
      f.tanh_c = aux_[size_t(l)].data() + t * B * Hd;
    } else {
      f.ghn = aux_[size_t(l)].data() + t * B * Hd;
    }
    cell_forward(f);
  }
}

void CellStack::end_forward() {
  ih_.clear(), hh_.clear(), b_ih_.clear(), b_hh_.clear(), w_extra_.clear();
  gh_ = Tensor();
}

void CellStack::begin_backward() {
  end_backward();
  // per-step products with the transposed weights packed once: x W = x (W^T)^T
  for (int64_t l = 0; l < L_; ++l) {
    const RnnWeights& r = w_[size_t(l)];
    ih_t_.push_back(nn::StepLinear::columns_of(r.weight_ih, l == 0 ? E_ : 0, l == 0 ? X_ : Hd_));
    hh_t_.push_back(nn::StepLinear::columns_of(r.weight_hh, 0, Hd_));
    dgx_.push_back(Tensor::empty({T_ * B_, G_}));
    dgh_.push_back(cell_ == CellType::Gru ? Tensor::empty({T_ * B_, G_}) : Tensor());
    dh_.push_back(Tensor::zeros({B_, Hd_}));
    if (cell_ == CellType::Lstm) dc_.push_back(Tensor::zeros({B_, Hd_}));
  }
  dx_ = Tensor::empty({B_, Hd_}), zero_row_ = Tensor::zeros({Hd_});
}

void CellStack::end_backward() {
  ih_t_.clear(), hh_t_.clear(), dgx_.clear(), dgh_.clear(), dh_.clear(), dc_.clear();
  dx_ = Tensor(), zero_row_ = Tensor();
}

// layer l's step t, given d h^l_t from above (dtop or dx_); layer 0 writes d extra_t
void CellStack::layer_backward(int64_t t, int64_t l, const float* dabove, float* dextra) {
  const int64_t B = B_, Hd = Hd_, G = G_;
  const bool lstm = cell_ == CellType::Lstm;
  CellBackward cb;
  cb.cell = cell_, cb.B = B, cb.Hd = Hd;
  cb.gates = gates_[size_t(l)].data() + t * B * G;
  if (lstm) {
    cb.c_prev = C_[size_t(l)].data() + t * B * Hd, cb.tanh_c = aux_[size_t(l)].data() + t * B * Hd;
    cb.dc = dc_[size_t(l)].data();
  } else {
    cb.ghn = aux_[size_t(l)].data() + t * B * Hd, cb.h_prev = h(l, t - 1);
    cb.dgh = dgh_[size_t(l)].data() + t * B * G;
  }
  cb.dy = dabove, cb.zero_row = zero_row_.data();
  cb.dh = dh_[size_t(l)].data(), cb.dgx = dgx_[size_t(l)].data() + t * B * G;
  cell_backward(cb);
  // h-side: GRU dh += dgh W_hh; LSTM dh = dgates W_hh
  apply_all(hh_t_[size_t(l)], B, lstm ? cb.dgx : cb.dgh, G, dh_[size_t(l)].data(), Hd, !lstm);
  if (l > 0) {  // x = h^{l-1}_t * m  =>  d h^{l-1}_t = (dgx W_ih) m
    apply_all(ih_t_[size_t(l)], B, cb.dgx, G, dx_.data(), Hd, false);
    if (masks_.defined()) {
      const float* m = masks_.data() + (t * (L_ - 1) + l - 1) * B * Hd;
      for (int64_t i = 0; i < B * Hd; ++i) dx_.data()[i] *= m[i];
    }
  } else if (dextra) {  // x = [emb_t; extra_t]  =>  d extra_t = dgx W_ix
    apply_all(ih_t_[0], B, cb.dgx, G, dextra, X_, false);
  }
}

void CellStack::backward(int64_t t, const float* dtop, float* dextra) {
  for (int64_t l = L_ - 1; l >= 0; --l) layer_backward(t, l, l == L_ - 1 ? dtop : dx_.data(), dextra);
}

std::vector<Tensor> CellStack::weight_grads(const Tensor& emb, const float* extra_rows, int64_t first,
                                            Tensor& demb) const {
  const int64_t TB = T_ * B_, B = B_, E = E_, Hd = Hd_, G = G_;
  std::vector<Tensor> g;
  for (int64_t l = 0; l < L_; ++l) {
    const RnnWeights& r = w_[size_t(l)];
    const Tensor& gx = dgx_[size_t(l)];
    const Tensor& gh = cell_ == CellType::Lstm ? gx : dgh_[size_t(l)];
    Tensor dWih = Tensor::empty(r.weight_ih.shape()), dWhh = Tensor::empty(r.weight_hh.shape());
    if (l == 0) {
      weight_grad(dWih, 0, gx.data(), G, emb.data(), E, TB);
      weight_grad(dWih, E, gx.data() + std::min(first, T_) * B * G, G, extra_rows, X_, TB - first * B);
      if (TB > 0)
        kernels::gemm(false, false, TB, E, G, 1.0f, gx.data(), G, r.weight_ih.data(), E + X_, 0.0f, demb.data(), E);
      else
        demb = Tensor::zeros(demb.shape());
    } else {
      weight_grad(dWih, 0, gx.data(), G, Xin_[size_t(l)].data(), Hd, TB);
    }
    weight_grad(dWhh, 0, gh.data(), G, H_[size_t(l)].data(), Hd, TB);
    g.push_back(dWih);
    g.push_back(dWhh);
    g.push_back(r.bias_ih.defined() ? kernels::sum_axis(gx, 0, false) : Tensor());
    g.push_back(r.bias_hh.defined() ? kernels::sum_axis(gh, 0, false) : Tensor());
  }
  return g;
}

}  // namespace attn::models::detail
