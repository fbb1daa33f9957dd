// The captioner's decoder step for greedy and beam search: ShowAttendTell::step()
// in eval mode fused into one parallel region per step, without autograd, on
// the pieces the translation kinds' search steps use (nn::StepLinear products
// over weights prepared once, in fp32, int8 or bf16; rnn_kernels' LSTM cell;
// the additive attention's row kernels; detail::StepLogits for the
// vocabulary's tiles, top k and shortlist).
//
// Legend: B images (rows of the encoder memory), N decoder rows of a step, L =
// G * G grid cells, D annotation size, A attention size, E embedding, Hd
// decoder size, V target vocabulary, k tokens kept per row.
//
// Per step, with the state {h, c} [N, Hd] (updated in place) and y [N] the
// previous tokens (the products marked * run in the compute type, everything
// else in fp32):
//   x[:, :E] = E[y]                                   embedding lookup
//   qp = h W^T [N, A] *;  gh = h W_hh^T [N, 4Hd] *     (the previous h)
//   beta = sigmoid(f_beta h + b) [N]                   the gate (one output: fp32 dot)
//   soft: alpha = softmax_i(v^T tanh(qp + keys_i)) [N, L], ctx = sum_i alpha_i a_i [N, D]
//   hard: alpha as soft, ctx = a_s, s = argmax_i alpha_i (the first maximum: eval mode's choice)
//   none: alpha = 1 / L, ctx = mean_i a_i
//   x[:, E:] = z = beta ctx [N, D]
//   gx = x W_ih^T [N, 4Hd] *;  h, c = LSTM gates(gx + b_ih, gh + b_hh, c)   (in place)
//   f = E[y] + h L_h^T * + z L_z^T * [N, E]            deep output (eq. 7)
//   logits = f L_o^T * + b [N, V] -> each row's k best and log p (StepLogits)
// The same equations as ShowAttendTell::step() in eval mode
// (tests/test_caption_search.cpp holds them equal in fp32 up to rounding).
#pragma once
#include <memory>

#include "attn/models/seq2seq.h"
#include "attn/models/show_attend_tell/show_attend_tell_config.h"
#include "attn/models/step_packing.h"

namespace attn::models {

struct ShowAttendTellStepWeights {
  ImageAttention attention = ImageAttention::Soft;
  Tensor embed;           // [V, E] target embedding
  Tensor query_w, v;      // W [A, Hd], v [A] (undefined for none)
  Tensor gate_w, gate_b;  // f_beta [1, Hd], [1] or undefined
  Tensor w_ih, w_hh;      // [4Hd, E + D] (columns: embedding, then z), [4Hd, Hd]
  Tensor b_ih, b_hh;      // [4Hd] each, or undefined (zeros)
  Tensor out_h, out_z;    // L_h [E, Hd], L_z [E, D]
  Tensor out_w, out_b;    // L_o [V, E], b [V] or undefined
};

// Checks the weights' shapes (std::invalid_argument) and prepares copies of them
// for searches computing in layout.type (packed for many rows: step_layout).
std::shared_ptr<const PreparedDecoder> prepare_show_attend_tell_decoder(const ShowAttendTellStepWeights& weights,
                                                                        StepLayout layout);

// A decoder over `memory` (values a [B, L, D], keys [B, L, A] (none: the
// values), lengths [B] as ShowAttendTell::encode() returns them) for at most
// max_rows rows per step. Throws std::invalid_argument when the memory does
// not fit the weights or `prepared` is not prepare_show_attend_tell_decoder()'s.
std::unique_ptr<StepDecoder> make_show_attend_tell_decoder(std::shared_ptr<const PreparedDecoder> prepared,
                                                           const EncoderMemory& memory, int64_t max_rows);

}  // namespace attn::models
