// Luong's decoder step for greedy and beam search: Luong::step() fused into
// one parallel region per step, without autograd, on the pieces rnnsearch's
// search step uses (nn::StepLinear products over weights prepared once, the
// cell kernels, the attention row kernels, detail::StepLogits for the
// vocabulary's tiles and top k).
//
// Legend: B sentences (rows of the encoder memory), N decoder rows of a step,
// S source length, E embedding, K key size, Dv annotation size, Hd decoder
// size, L layers, G = 3 Hd (GRU) or 4 Hd (LSTM), A concat / local-p size, V
// target vocabulary, k tokens kept per row.
//
// Prepared once for many searches: the weights in the layout the products
// read, and layer 0's embedding product folded into a table, since the
// previous token y is one of V ids: T[y] = E[y] W_ih0[:, :E]^T + b_ih0 [V, G]
// (when it holds at most kMaxFoldedFloats floats; else the product runs per step).
//
// Per step t, with state {h^l, c^l (LSTM), h̃} and y the previous token of each row
// (the state's rows are updated in place; local-m centres its window on t):
//   g^0 = T[y] + h̃ W_ih0[:, E:]^T;  layer l: g^l = h^{l-1}' W_ih^T;  gh = h^l W_hh^T;  h^l', c^l' = cell
//   scores over the row's sentence's keys from h = h^{L-1}' (dot, general; concat
//   through W_q h); the window around t (local-m) or p = length sigmoid(v_p^T tanh(W_p h)) (local-p)
//   c = sum_j a_j v_j;  h̃' = tanh(W_c [c; h]);  logits = h̃' W_s^T + b_s (StepLogits)
// The same equations as Luong::step() (tests/test_luong_search.cpp holds them equal up to rounding).
#pragma once
#include <memory>
#include <string>

#include "attn/models/luong/luong_decoder.h"
#include "attn/models/seq2seq.h"
#include "attn/models/step_packing.h"

namespace attn::models {

// The names of Luong's decoder state (Luong::encode(), step(), the fused
// step): "h<l>" and "c<l>" (LSTM only) [N, Hd] per layer l, "feed" h̃ [N, Hd].
namespace luong_state {
inline std::string h(int64_t layer) { return "h" + std::to_string(layer); }
inline std::string c(int64_t layer) { return "c" + std::to_string(layer); }
inline const char* const kFeed = "feed";
}  // namespace luong_state

struct LuongStepWeights {
  Tensor embed;           // [V, E] target embedding
  LuongLoopWeights loop;  // the cells, score, window and W_c (as the training loop reads them)
  Tensor w_s, b_s;        // [V, Hd] vocabulary projection, [V] or undefined
};

// Checks the weights' shapes (std::invalid_argument) and prepares copies of them.
std::shared_ptr<const PreparedDecoder> prepare_luong_decoder(const LuongStepWeights& weights, StepLayout layout);

// A decoder over `memory` (keys [B, S, K], values [B, S, Dv], lengths [B] as
// Luong::encode() returns them) for at most max_rows rows per step. Throws
// std::invalid_argument when the memory does not fit the weights or
// `prepared` is not prepare_luong_decoder()'s.
std::unique_ptr<StepDecoder> make_luong_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                const EncoderMemory& memory, int64_t max_rows);

}  // namespace attn::models
