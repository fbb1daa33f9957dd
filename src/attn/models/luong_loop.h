// What luong_decoder's forward (luong_decoder.cpp) saves for its backward
// (luong_decoder_backward.cpp): internal to models/. Row blocks are time-major:
// step t's rows are [t B, t B + B).
#pragma once
#include <cstdint>
#include <vector>

#include "attn/models/luong_decoder.h"

namespace attn::models::detail {

struct LuongDims {
  int64_t T, B, E, S, K, Dv, Hd, G, L, A;
};

struct LuongSaved {
  std::vector<Tensor> H;      // L x [(T + 1) B, Hd] h^l_{t-1} at block t (block 0: h0), h^l_t at block t + 1
  std::vector<Tensor> C;      // L x [(T + 1) B, Hd] the LSTM cells, as H (empty for GRU)
  std::vector<Tensor> gates;  // L x [T B, G] activated gates
  std::vector<Tensor> aux;    // L x [T B, Hd] GRU: W_hn h + b_hn; LSTM: tanh(c')
  std::vector<Tensor> X;      // L x [T B, Hd] layer l > 0's input h^{l-1}_t * m^l_t (X[0] undefined)
  Tensor htilde;              // [T B, Hd] tanh(W_c [c; h]) before the feed mask
  Tensor out;                 // [T, B, Hd] the op's output h̃ (after the mask)
  Tensor a;                   // [T B, S] softmax weights (before local-p's Gaussian)
  Tensor ctx;                 // [T B, Dv] contexts
  Tensor qp;                  // [T B, A] concat: W_q h_t
  Tensor u;                   // [T B, A] local-p: tanh(W_p h_t)
  Tensor pos;                 // [T B] local-p: p_t
  std::vector<int64_t> lo, hi;  // [T B] each row's visible keys [lo, hi)
};

// The inputs and weights the backward reads, detached, with the saved tensors.
struct LuongBackwardInputs {
  LuongDims d;
  std::vector<int64_t> len;
  LuongLoopInputs in;
  LuongLoopWeights w;
  LuongSaved sv;
};

// d(loss)/d(out) [T, B, Hd] -> the gradients in record()'s input order: emb,
// keys, values, h0[0..L), c0[0..L) (LSTM), per layer w_ih, w_hh, b_ih, b_hh,
// then concat_q, concat_v, local_wp, local_vp, combine.
std::vector<Tensor> luong_decoder_backward(const LuongBackwardInputs& in, const Tensor& dout);

// sigma^-2 / 2 of local-p's Gaussian, sigma = D / 2 (attention::attend's rule)
inline float luong_inv_two_sigma2(int64_t half_width) {
  const float sigma = 0.5f * float(half_width > 0 ? half_width : 1);
  return 1.0f / (2.0f * sigma * sigma);
}

}  // namespace attn::models::detail
