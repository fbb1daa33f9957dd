// What luong_decoder's forward (luong_decoder.cpp) saves for its backward
// (luong_decoder_backward.cpp): internal to models/. Row blocks are time-major:
// step t's rows are [t B, t B + B). Both are the wiring luong plugs into the
// shared decoder loop (decoder_loop.h): after the cells, attention on h_t and
// h̃_t; layer 0's extra input is h̃_{t-1} (input feeding).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "attn/models/rnn/decoder_loop.h"
#include "attn/models/luong/luong_decoder.h"

namespace attn::models::detail {

struct LuongDims {
  int64_t T, B, E, S, K, Dv, Hd, G, L, A;
};

struct LuongSaved {
  std::unique_ptr<CellStack> cells;  // the L layers' states, gates and their backward (decoder_loop.h)
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
