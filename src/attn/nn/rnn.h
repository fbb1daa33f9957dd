// Recurrent layers: the fused "gru" / "lstm" ops (one direction of one layer
// over a whole padded batch, hand-written backward), the GRUCell / LSTMCell
// single-step modules built on them, and the stacked, optionally
// bidirectional nn::GRU / nn::LSTM modules. Parameter names, gate order,
// equations and initialisation are PyTorch's (torch.nn.GRU / LSTM / GRUCell /
// LSTMCell), so state dicts map one to one.
//
// Legend: batch = sequences in the batch, seq_len = padded length (axis 1, the
// batch-first layout), in = input features, H = hidden size, G = gates per
// cell (GRU 3: r, z, n; LSTM 4: i, f, g, o), L = num_layers, D = directions
// (1, or 2 when bidirectional).
//
// Padding: lengths[b] in [0, seq_len] is the number of valid steps of
// sequence b. Steps t >= lengths[b] are never read, their outputs are zero,
// and they change no state (PyTorch's pack_padded_sequence semantics); a
// length of 0 gives h_n = h0 and an all-zero output row.
#pragma once
#include <cstdint>
#include <vector>

#include "attn/autograd/ops.h"
#include "attn/nn/module.h"
#include "attn/tensor/random.h"

namespace attn {

// One layer-direction's parameters, PyTorch layout.
struct RnnWeights {
  Tensor weight_ih;  // [G*H, in]
  Tensor weight_hh;  // [G*H, H]
  Tensor bias_ih;    // [G*H], or undefined (no bias)
  Tensor bias_hh;    // [G*H], or undefined (no bias)
};

// Forward walks t = 0 .. lengths[b]-1; Reverse walks t = lengths[b]-1 .. 0,
// i.e. each sequence from its own last valid step, as PyTorch's reverse
// direction on packed sequences.
enum class RnnDirection { Forward, Reverse };

// Results of the ops (shapes given first) and of the stacked modules (second).
struct GruResult {
  Tensor output;  // [batch, seq_len, H] / [batch, seq_len, D*H]: h at every valid step, zeros at padding
  Tensor h_n;     // [batch, H] / [L*D, batch, H]: h after each sequence's last valid step
};
struct LstmResult {
  Tensor output;  // [batch, seq_len, H] / [batch, seq_len, D*H]
  Tensor h_n;     // [batch, H] / [L*D, batch, H]
  Tensor c_n;     // [batch, H] / [L*D, batch, H]: cell state after the last valid step
};

// The fused "gru" op. x [batch, seq_len, in], lengths [batch] (values in
// [0, seq_len]), h0 [batch, H] or undefined (zeros); w as RnnWeights with G = 3.
// Forward: one GEMM for all input projections x W_ih^T, then per step one
// product h W_hh^T (W_hh packed once per call, rnn_gemm.h) and one fused gate
// pass, by a team of threads that each own a slice of the hidden units.
// Backward: per step one gate pass and one product dgates W_hh for dh_prev;
// then one GEMM each for dW_hh, dW_ih and dx over all steps, and column sums
// for the biases. Padded positions are never computed (rnn_recurrence.h).
// Throws std::invalid_argument naming the shapes when they do not fit.
GruResult gru(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const RnnWeights& w,
              RnnDirection direction = RnnDirection::Forward);
// Same, lengths as a float-encoded [batch] tensor of whole numbers.
GruResult gru(const Tensor& x, const Tensor& lengths, const Tensor& h0, const RnnWeights& w,
              RnnDirection direction = RnnDirection::Forward);

// The fused "lstm" op: as gru() with G = 4 and a cell state; h0, c0 [batch, H]
// or undefined (zeros).
LstmResult lstm(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const Tensor& c0,
                const RnnWeights& w, RnnDirection direction = RnnDirection::Forward);
LstmResult lstm(const Tensor& x, const Tensor& lengths, const Tensor& h0, const Tensor& c0, const RnnWeights& w,
                RnnDirection direction = RnnDirection::Forward);

// A float-encoded [batch] lengths tensor as integers; throws on a value that
// is not a whole number >= 0.
std::vector<int64_t> lengths_from_tensor(const Tensor& lengths);

}  // namespace attn

namespace attn::nn {

// One GRU step (torch.nn.GRUCell): the "gru" op with seq_len 1, so training a
// decoder step by step runs the same fused kernels. Parameters weight_ih
// [3H, in], weight_hh [3H, H], bias_ih [3H], bias_hh [3H], init U(-1/sqrt(H), 1/sqrt(H)).
class GRUCell : public Module {
public:
  GRUCell(int64_t input_size, int64_t hidden_size, Rng& rng);
  // x [batch, in], h [batch, H] (undefined: zeros) -> h' [batch, H]
  Tensor forward(const Tensor& x, const Tensor& h) const;
  RnnWeights weights() const { return {weight_ih, weight_hh, bias_ih, bias_hh}; }
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  int64_t input_size, hidden_size;
};

struct LstmState {
  Tensor h;  // [batch, H]
  Tensor c;  // [batch, H]
};

// One LSTM step (torch.nn.LSTMCell) on the "lstm" op with seq_len 1.
// Parameters as GRUCell with 4H rows.
class LSTMCell : public Module {
public:
  LSTMCell(int64_t input_size, int64_t hidden_size, Rng& rng);
  // x [batch, in], state {h, c} [batch, H] each (undefined: zeros) -> {h', c'}
  LstmState forward(const Tensor& x, const LstmState& state) const;
  RnnWeights weights() const { return {weight_ih, weight_hh, bias_ih, bias_hh}; }
  Tensor weight_ih, weight_hh, bias_ih, bias_hh;
  int64_t input_size, hidden_size;
};

// Configuration of a stacked recurrent layer (torch.nn.GRU / LSTM arguments;
// always batch_first, always with biases).
struct RnnOptions {
  int64_t input_size = 0;      // features of x (required, > 0)
  int64_t hidden_size = 0;     // H (required, > 0)
  int64_t num_layers = 1;      // L stacked layers; layer k > 0 reads layer k-1's output [.., D*H]
  bool bidirectional = false;  // D = 2: a Reverse direction beside the Forward one, outputs concatenated
  float dropout = 0.0f;        // dropout on every layer's output but the last, in training mode only
};

// Stacked, optionally bidirectional GRU / LSTM. Parameters per layer k and
// direction (suffix "" or "_reverse"): weight_ih_l{k}{suffix} [G*H, in_k],
// weight_hh_l{k}{suffix} [G*H, H], bias_ih_l{k}{suffix} [G*H],
// bias_hh_l{k}{suffix} [G*H]; in_0 = input_size, in_k = D*H. Registered in
// PyTorch's order, initialised U(-1/sqrt(H), 1/sqrt(H)) like PyTorch.
class RnnStack : public Module {
public:
  const RnnOptions& options() const { return opt_; }
  // The weights of layer `layer`, direction 0 (Forward) or 1 (Reverse).
  RnnWeights weights(int64_t layer, int direction) const;

protected:
  RnnStack(const RnnOptions& opt, int gates, const char* who, Rng& rng);
  // The layers in order. x [batch, seq_len, input_size]; h0 / c0
  // [L*D, batch, H] or undefined. Returns output [batch, seq_len, D*H],
  // h_n [L*D, batch, H] and (LSTM) c_n [L*D, batch, H].
  LstmResult run(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0, const Tensor& c0,
                 bool lstm) const;

private:
  RnnOptions opt_;
  std::vector<RnnWeights> w_;  // [layer * D + direction]
  Rng* rng_;                   // the stack's own dropout stream (named_rngs(): "dropout_rng")
};

class GRU : public RnnStack {
public:
  GRU(const RnnOptions& opt, Rng& rng);
  // x [batch, seq_len, input_size], lengths [batch], h0 [L*D, batch, H] or
  // undefined (zeros) -> output [batch, seq_len, D*H] (zeros at padding),
  // h_n [L*D, batch, H] (index layer*D + direction, as PyTorch).
  GruResult forward(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0 = Tensor()) const;
  GruResult forward(const Tensor& x, const Tensor& lengths, const Tensor& h0 = Tensor()) const {
    return forward(x, lengths_from_tensor(lengths), h0);
  }
};

class LSTM : public RnnStack {
public:
  LSTM(const RnnOptions& opt, Rng& rng);
  // As GRU::forward, plus c0 / c_n [L*D, batch, H].
  LstmResult forward(const Tensor& x, const std::vector<int64_t>& lengths, const Tensor& h0 = Tensor(),
                     const Tensor& c0 = Tensor()) const;
  LstmResult forward(const Tensor& x, const Tensor& lengths, const Tensor& h0 = Tensor(),
                     const Tensor& c0 = Tensor()) const {
    return forward(x, lengths_from_tensor(lengths), h0, c0);
  }
};

}  // namespace attn::nn
